// The standard op definitions, one function per family; RegisterStandardOps calls them all.
// Op names, inputs, outputs, attrs and defaults are TensorFlow's.
#ifndef CONFLUX_CORE_SRC_FRAMEWORK_OPS_OPS_H_
#define CONFLUX_CORE_SRC_FRAMEWORK_OPS_OPS_H_

#include "conflux/op_def.h"

namespace cfx::internal {

void RegisterCoreOps(OpRegistry* r);         // Const, Identity, NoOp, Placeholder
void RegisterElementwiseOps(OpRegistry* r);  // Add..SquaredDifference, AddN, unary math,
                                             // comparisons, logical ops, Cast, Select, SelectV2
void RegisterArrayOps(OpRegistry* r);        // Reshape, Shape, ConcatV2, Slice, StridedSlice,
                                             // Split, SplitV, ...
void RegisterPadOps(OpRegistry* r);          // Pad, PadV2, MirrorPad, MirrorPadGrad
void RegisterIndexOps(OpRegistry* r);        // TopKV2, OneHot, GatherNd, ScatterNd,
                                             // TensorScatterUpdate
void RegisterReorderOps(OpRegistry* r);      // ReverseV2, SpaceToDepth, DepthToSpace
void RegisterReductionOps(OpRegistry* r);    // Sum, Mean, Max, Min, Prod, All, Any, ArgMax, ArgMin,
                                             // Cumsum, Cumprod
void RegisterMatMulOps(OpRegistry* r);       // MatMul
void RegisterStateOps(OpRegistry* r);  // _Arg, _Retval, _Send, _Recv, variables, queues
void RegisterRandomOps(OpRegistry* r);       // RandomUniform, RandomStandardNormal,
                                             // TruncatedNormal, RandomUniformInt, RandomShuffle
void RegisterLinalgOps(OpRegistry* r);       // MatrixInverse, MatrixDeterminant, BatchMatMulV2,
                                             // MatrixBandPart, Einsum
void RegisterDebugOps(OpRegistry* r);        // Assert, Print, CheckNumerics
void RegisterIoOps(OpRegistry* r);           // SaveV2, RestoreV2, readers, DecodeRaw
void RegisterSummaryOps(OpRegistry* r);      // ScalarSummary, HistogramSummary, ImageSummary, ...
void RegisterTrainingOps(OpRegistry* r);     // (Resource)Apply{GradientDescent, Momentum, Adam,
                                             // RMSProp}
void RegisterGradientOps(OpRegistry* r);     // ReluGrad, SigmoidGrad, ..., BroadcastGradientArgs,
                                             // BroadcastTo, InvertPermutation, StopGradient,
                                             // PreventGradient, UnsortedSegmentSum
void RegisterControlFlowOps(OpRegistry* r);  // Switch, Merge, Enter, Exit, NextIteration (and Ref
                                             // variants), LoopCond, ControlTrigger
void RegisterListOps(OpRegistry* r);         // EmptyTensorList, TensorListPushBack, ...
void RegisterDataFlowOps(OpRegistry* r);     // TensorArrayV3 family, StackV2 family,
                                             // ConditionalAccumulator family
void RegisterCollectiveOps(OpRegistry* r);   // CollectiveReduceV2, CollectiveGatherV2,
                                             // CollectiveBcastSendV2, CollectiveBcastRecvV2
void RegisterLookupOps(OpRegistry* r);       // HashTableV2, MutableHashTableV2, ...,
                                             // InitializeTableV2, LookupTableFindV2, ...
void RegisterStringOps(OpRegistry* r);       // StringJoin, StringLength, StringLower,
                                             // StringUpper, (Static)RegexFullMatch

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_FRAMEWORK_OPS_OPS_H_
