// Errors of the MPI transport: an MPI return code as a status naming the call, where it went
// and MPI's own message. Stateless; thread-safe.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_ERRORS_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_ERRORS_H_

#include <string>
#include <string_view>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

// UNAVAILABLE "mpi transport: <call> <where>: <MPI's error string> (MPI error <code>)". `where`
// names the peer and the key ("to /job:worker/replica:0/task:1, key '5;w:0'").
sdk::Status MpiError(const char* call, int code, const std::string& where);

// A message key for people: printable ASCII as is, other bytes as \xNN, at most 200 characters.
std::string PrintableKey(std::string_view key);

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_ERRORS_H_
