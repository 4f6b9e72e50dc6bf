// NumPy .npy files: one array per file (numpy.save / numpy.load).
//
// Reading accepts format versions 1.0, 2.0 and 3.0, C-order arrays of bool, int8..int64,
// uint8..uint64, float16 ('f2', read as half), float32, float64, complex64 and complex128, in
// either byte order ('>' is swapped to the host's order), with any shape including scalars ()
// and zero-size dimensions. Writing produces version 1.0 (2.0 when the header does not fit in
// 1.0's 16-bit length), little-endian, padded to 64 bytes as numpy does. Fixed-width string
// arrays are string tensors: bytes ('S', trailing NULs dropped as numpy drops them) and text
// ('U', UTF-32, turned into UTF-8); a string tensor is written as bytes ('S', as wide as its
// longest element). Object arrays get an error saying how to convert them. bfloat16 and resource
// tensors have no NumPy dtype and are refused. All functions are thread-safe.
#ifndef CONFLUX_NPY_H_
#define CONFLUX_NPY_H_

#include <string>
#include <string_view>

#include "conflux/status.h"
#include "conflux/tensor.h"

namespace cfx {

// Reads `path` into a new host tensor. Errors name the file and what was wrong: bad magic,
// truncated header, malformed header dict, unsupported descr, payload size mismatch
// (InvalidArgument), fortran_order True (Unimplemented), an unreadable file (NotFound).
StatusOr<Tensor> ReadNpy(const std::string& path);
// Writes a host tensor to `path`, replacing the file. Unimplemented for a dtype NumPy lacks;
// InvalidArgument for a tensor without a host buffer; an I/O failure names the file.
Status WriteNpy(const std::string& path, const Tensor& host_tensor);

// The same, on the bytes of a file held in memory. Errors name `source` ("<memory>" when
// empty) where ReadNpy would name the file.
StatusOr<Tensor> ParseNpy(std::string_view data, std::string_view source = {});
StatusOr<std::string> SerializeNpy(const Tensor& host_tensor);

}  // namespace cfx

#endif  // CONFLUX_NPY_H_
