// MpiError, PrintableKey.
#include "mpi_errors.h"

#include <mpi.h>

#include <cstdio>

namespace cfx::mpi {

sdk::Status MpiError(const char* call, int code, const std::string& where) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof(text), "unknown MPI error");
  return sdk::Status(CFX_UNAVAILABLE, sdk::StrCat("mpi transport: ", call, " ", where, ": ", text,
                                                  " (MPI error ", code, ")"));
}

std::string PrintableKey(std::string_view key) {
  constexpr size_t kMax = 200;
  std::string out;
  for (unsigned char c : key) {
    if (out.size() >= kMax) return out + "...";
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

}  // namespace cfx::mpi
