// The transport-mpi plugin: the "mpi" transport and its host-memory collectives.
#include "conflux/sdk.h"
#include "mpi_collectives.h"
#include "mpi_transport.h"

namespace {

cfx::sdk::Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("transport-mpi", "0.1.0");
  p.Transport<cfx::mpi::MpiTransport>("mpi").HostCollectives<cfx::mpi::MpiCollectives>("mpi");
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
