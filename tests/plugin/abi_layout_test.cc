// Pins the layout of the plugin ABI structs (x86-64 / LP64). A failure here means a change
// broke plugins built against an earlier header: append fields instead, or bump the major.
#include <gtest/gtest.h>

#include <cstddef>

#include "conflux/plugin_api.h"

namespace {

TEST(AbiLayout, HostDeviceConfig) {
  EXPECT_EQ(sizeof(cfx_host_device_config), 56u);
  EXPECT_EQ(offsetof(cfx_host_device_config, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_host_device_config, index), 8u);
  EXPECT_EQ(offsetof(cfx_host_device_config, memory_limit), 16u);
  EXPECT_EQ(offsetof(cfx_host_device_config, intra_op_threads), 24u);
  EXPECT_EQ(offsetof(cfx_host_device_config, num_options), 32u);
  EXPECT_EQ(offsetof(cfx_host_device_config, option_keys), 40u);
  EXPECT_EQ(offsetof(cfx_host_device_config, option_values), 48u);
}

TEST(AbiLayout, DeviceFuncs) {
  EXPECT_EQ(sizeof(cfx_device_funcs), 152u);
  EXPECT_EQ(offsetof(cfx_device_funcs, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_device_funcs, allocate), 8u);
  EXPECT_EQ(offsetof(cfx_device_funcs, deallocate), 16u);
  EXPECT_EQ(offsetof(cfx_device_funcs, copy_host_to_device), 24u);
  EXPECT_EQ(offsetof(cfx_device_funcs, copy_device_to_host), 32u);
  EXPECT_EQ(offsetof(cfx_device_funcs, copy_device_to_device), 40u);
  EXPECT_EQ(offsetof(cfx_device_funcs, stream_create), 48u);
  EXPECT_EQ(offsetof(cfx_device_funcs, stream_destroy), 56u);
  EXPECT_EQ(offsetof(cfx_device_funcs, stream_synchronize), 64u);
  EXPECT_EQ(offsetof(cfx_device_funcs, stream_then), 72u);
  EXPECT_EQ(offsetof(cfx_device_funcs, event_create), 80u);
  EXPECT_EQ(offsetof(cfx_device_funcs, event_destroy), 88u);
  EXPECT_EQ(offsetof(cfx_device_funcs, event_record), 96u);
  EXPECT_EQ(offsetof(cfx_device_funcs, event_query), 104u);
  EXPECT_EQ(offsetof(cfx_device_funcs, event_synchronize), 112u);
  EXPECT_EQ(offsetof(cfx_device_funcs, stream_wait_event), 120u);
  EXPECT_EQ(offsetof(cfx_device_funcs, parallel_for), 128u);
  EXPECT_EQ(offsetof(cfx_device_funcs, describe), 136u);
  EXPECT_EQ(offsetof(cfx_device_funcs, memory_limit), 144u);  // appended in 1.4
}

TEST(AbiLayout, DeviceTypeDesc) {
  EXPECT_EQ(sizeof(cfx_device_type_desc), 64u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, type), 8u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, type_state), 16u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, host_addressable), 24u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, count), 32u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, create_device), 40u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, destroy_device), 48u);
  EXPECT_EQ(offsetof(cfx_device_type_desc, funcs), 56u);
}

TEST(AbiLayout, PluginInfo) {
  EXPECT_EQ(sizeof(cfx_plugin_info), 40u);
  EXPECT_EQ(offsetof(cfx_plugin_info, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_plugin_info, name), 8u);
  EXPECT_EQ(offsetof(cfx_plugin_info, version), 16u);
  EXPECT_EQ(offsetof(cfx_plugin_info, plugin_state), 24u);
  EXPECT_EQ(offsetof(cfx_plugin_info, shutdown), 32u);
}

TEST(AbiLayout, HostPluginOptions) {
  EXPECT_EQ(sizeof(cfx_host_plugin_options), 32u);
  EXPECT_EQ(offsetof(cfx_host_plugin_options, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_host_plugin_options, count), 8u);
  EXPECT_EQ(offsetof(cfx_host_plugin_options, keys), 16u);
  EXPECT_EQ(offsetof(cfx_host_plugin_options, values), 24u);
}

TEST(AbiLayout, HostApi) {
  EXPECT_EQ(sizeof(cfx_host_api), 872u);
  EXPECT_EQ(offsetof(cfx_host_api, struct_size), 0u);
  EXPECT_EQ(offsetof(cfx_host_api, abi_major), 8u);
  EXPECT_EQ(offsetof(cfx_host_api, abi_minor), 12u);
  EXPECT_EQ(offsetof(cfx_host_api, status_set), 16u);
  EXPECT_EQ(offsetof(cfx_host_api, status_code), 24u);
  EXPECT_EQ(offsetof(cfx_host_api, status_message), 32u);
  EXPECT_EQ(offsetof(cfx_host_api, status_new), 40u);
  EXPECT_EQ(offsetof(cfx_host_api, status_delete), 48u);
  EXPECT_EQ(offsetof(cfx_host_api, log), 56u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_new), 64u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_input), 72u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_output), 80u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_attr), 88u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_set_stateful), 96u);
  EXPECT_EQ(offsetof(cfx_host_api, op_builder_set_shape_fn), 104u);
  EXPECT_EQ(offsetof(cfx_host_api, register_op), 112u);
  EXPECT_EQ(offsetof(cfx_host_api, kernel_builder_new), 120u);
  EXPECT_EQ(offsetof(cfx_host_api, kernel_builder_type_constraint), 128u);
  EXPECT_EQ(offsetof(cfx_host_api, kernel_builder_host_memory), 136u);
  EXPECT_EQ(offsetof(cfx_host_api, kernel_builder_set_flags), 144u);
  EXPECT_EQ(offsetof(cfx_host_api, register_kernel), 152u);
  EXPECT_EQ(offsetof(cfx_host_api, register_device_type), 160u);
  EXPECT_EQ(offsetof(cfx_host_api, attrs_node_name), 168u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_exists), 176u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_int), 184u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_float), 192u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_bool), 200u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_type), 208u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_string), 216u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_shape), 224u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_list_size), 232u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_int_list), 240u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_float_list), 248u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_type_list), 256u);
  EXPECT_EQ(offsetof(cfx_host_api, attr_get_tensor), 264u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_dtype), 272u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_rank), 280u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_dim), 288u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_num_elements), 296u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_byte_size), 304u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_data), 312u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_share), 320u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_release), 328u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_string), 336u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_set_string), 344u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor_new_host), 352u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_num_inputs), 360u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_num_outputs), 368u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_input), 376u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_output_dtype), 384u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_allocate_output), 392u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_set_output), 400u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_forward_or_allocate), 408u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_allocate_temp), 416u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_set_error), 424u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_device), 432u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_stream), 440u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_node_name), 448u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_parallel_for), 456u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_attrs), 464u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_num_inputs), 472u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_num_outputs), 480u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_input_rank), 488u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_input_dim), 496u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_input_tensor), 504u);
  EXPECT_EQ(offsetof(cfx_host_api, shape_set_output), 512u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_set_output_reshaped), 520u);
  // Minor 1.
  EXPECT_EQ(offsetof(cfx_host_api, ctx_input_is_ref), 528u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_ref_input_lock), 536u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_ref_input_unlock), 544u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_ref_input_assign), 552u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_forward_ref_input), 560u);
  EXPECT_EQ(offsetof(cfx_host_api, ctx_input_variable), 568u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_lock), 576u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_unlock), 584u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_tensor), 592u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_tensor_for_update), 600u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_assign), 608u);
  EXPECT_EQ(offsetof(cfx_host_api, variable_release), 616u);
  // Minor 2: gradient functions.
  EXPECT_EQ(offsetof(cfx_host_api, register_gradient), 624u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_num_inputs), 632u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_num_outputs), 640u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_input), 648u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_output), 656u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_output_grad), 664u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_attrs), 672u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_tensor_dtype), 680u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_new), 688u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_input), 696u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_input_list), 704u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_int), 712u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_float), 720u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_bool), 728u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_type), 736u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_string), 744u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_attr_int_list), 752u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_copy_attr), 760u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_node_finish), 768u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_set_input_grad), 776u);
  EXPECT_EQ(offsetof(cfx_host_api, grad_scalar), 784u);
  // Minor 3: the tables by concept.
  EXPECT_EQ(offsetof(cfx_host_api, core), 792u);
  EXPECT_EQ(offsetof(cfx_host_api, registration), 800u);
  EXPECT_EQ(offsetof(cfx_host_api, attr), 808u);
  EXPECT_EQ(offsetof(cfx_host_api, shape), 816u);
  EXPECT_EQ(offsetof(cfx_host_api, tensor), 824u);
  EXPECT_EQ(offsetof(cfx_host_api, kernel), 832u);
  EXPECT_EQ(offsetof(cfx_host_api, state), 840u);
  EXPECT_EQ(offsetof(cfx_host_api, gradient), 848u);
  EXPECT_EQ(offsetof(cfx_host_api, device), 856u);
  EXPECT_EQ(offsetof(cfx_host_api, transport), 864u);
}

// The tables as released in minor 3 (struct_size, then one pointer per function), the
// transport table's functions appended in minor 4, and the kernel table's file functions and
// the attr table's string-list reader appended after it.
TEST(AbiLayout, HostTables) {
  constexpr size_t kPtr = sizeof(void*);
  EXPECT_EQ(sizeof(cfx_host_core_api), (1 + 6) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_registration_api), (1 + 14) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_attr_api), (1 + 14) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_shape_api), (1 + 7) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_tensor_api), (1 + 11) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_kernel_api), (1 + 24) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_state_api), (1 + 12) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_gradient_api), (1 + 20) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_device_api), (1 + 3) * kPtr);
  EXPECT_EQ(sizeof(cfx_host_transport_api), (1 + 5) * kPtr);
  EXPECT_EQ(offsetof(cfx_host_core_api, log), 6 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_registration_api, register_gradient), 14 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_attr_api, get_tensor), 13 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_attr_api, get_string_list_item), 14 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_shape_api, set_output), 7 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_tensor_api, new_host), 11 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, set_output_reshaped), 7 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, node_name), 11 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, step_id), 12 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, frame_id), 13 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, iteration), 14 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, register_cancellation), 15 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, deregister_cancellation), 16 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_open), 17 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_append), 18 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_sync), 19 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_close), 20 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_rename), 21 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_delete), 22 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_create_dir), 23 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_kernel_api, file_sync_dir), 24 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_state_api, variable_release), 12 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_gradient_api, scalar), 20 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_device_api, parallel_for), 3 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_transport_api, register_transport), 1 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_transport_api, register_collectives), 2 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_transport_api, group_rank), 3 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_transport_api, group_size), 4 * kPtr);
  EXPECT_EQ(offsetof(cfx_host_transport_api, group_broadcast), 5 * kPtr);
}

// Minor 4: transports and collectives (conflux/plugin_transport.h).
TEST(AbiLayout, TransportStructs) {
  EXPECT_EQ(sizeof(cfx_host_transport_config), 40u);
  EXPECT_EQ(offsetof(cfx_host_transport_config, num_options), 8u);
  EXPECT_EQ(offsetof(cfx_host_transport_config, option_keys), 16u);
  EXPECT_EQ(offsetof(cfx_host_transport_config, option_values), 24u);
  EXPECT_EQ(offsetof(cfx_host_transport_config, expected_size), 32u);
  EXPECT_EQ(sizeof(cfx_transport_funcs), 80u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, rank), 8u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, size), 16u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, set_peer_name), 24u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, describe_peer), 32u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, send), 40u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, recv), 48u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, cancel), 56u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, abort_prefix), 64u);
  EXPECT_EQ(offsetof(cfx_transport_funcs, device_memory), 72u);
  EXPECT_EQ(sizeof(cfx_collective_funcs), 32u);
  EXPECT_EQ(offsetof(cfx_collective_funcs, all_reduce), 8u);
  EXPECT_EQ(offsetof(cfx_collective_funcs, all_gather), 16u);
  EXPECT_EQ(offsetof(cfx_collective_funcs, broadcast), 24u);
  EXPECT_EQ(sizeof(cfx_collectives_desc), 56u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, name), 8u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, device_type), 16u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, state), 24u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, create), 32u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, destroy), 40u);
  EXPECT_EQ(offsetof(cfx_collectives_desc, funcs), 48u);
  EXPECT_EQ(sizeof(cfx_transport_desc), 56u);
  EXPECT_EQ(offsetof(cfx_transport_desc, name), 8u);
  EXPECT_EQ(offsetof(cfx_transport_desc, state), 16u);
  EXPECT_EQ(offsetof(cfx_transport_desc, create), 24u);
  EXPECT_EQ(offsetof(cfx_transport_desc, destroy), 32u);
  EXPECT_EQ(offsetof(cfx_transport_desc, funcs), 40u);
  EXPECT_EQ(offsetof(cfx_transport_desc, collectives), 48u);
  EXPECT_EQ(CFX_REDUCE_SUM, 0);
  EXPECT_EQ(CFX_REDUCE_MEAN, 1);
  EXPECT_EQ(CFX_REDUCE_MIN, 2);
  EXPECT_EQ(CFX_REDUCE_MAX, 3);
  EXPECT_EQ(CFX_REDUCE_PROD, 4);
}

TEST(AbiLayout, Versions) {
  EXPECT_EQ(CFX_ABI_MAJOR, 1);
  EXPECT_EQ(CFX_FLOAT, 1);
  EXPECT_EQ(CFX_INT32, 3);
  EXPECT_EQ(CFX_STRING, 7);
  EXPECT_EQ(CFX_BOOL, 10);
  EXPECT_EQ(CFX_BFLOAT16, 14);
  EXPECT_EQ(CFX_HALF, 19);
  EXPECT_EQ(CFX_RESOURCE, 20);
  EXPECT_EQ(CFX_UINT64, 23);
  EXPECT_EQ(CFX_INVALID_ARGUMENT, 3);
  EXPECT_EQ(CFX_UNAUTHENTICATED, 16);
  EXPECT_EQ(sizeof(cfx_cancel_token), 8u);
  EXPECT_EQ(CFX_INVALID_CANCEL_TOKEN, -1);
}

}  // namespace
