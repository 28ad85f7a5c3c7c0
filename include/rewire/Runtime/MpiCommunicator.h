//===- MpiCommunicator.h - Data parallelism over MPI -------------*- C++ -*-===//
//
// The Communicator (Communicator.h) of a run started by mpirun (Open MPI,
// or any MPI the build found): one process per rank over MPI_COMM_WORLD.
// Sums go in buckets of 4M values, all posted (MPI_Iallreduce) and then
// waited on, so the network carries one bucket while the next is summed;
// startSum posts without waiting (the trainer's gradients as the backward
// finishes them), progress tests the requests (Open MPI moves them on only
// inside MPI calls), finishSums waits.
// `deterministic` sums in rank order instead (MPI_Allgather, then rank 0's
// values + rank 1's + ...): the same bits for every run at the same rank
// count, whatever algorithm the MPI library picks; it moves N times the
// data. Built into librewire_mpi only where CMake found MPI
// (REWIRE_HAVE_MPI).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_MPICOMMUNICATOR_H
#define REWIRE_RUNTIME_MPICOMMUNICATOR_H

#include "rewire/Runtime/Communicator.h"

#include <memory>

namespace rewire::runtime {

/// Initializes MPI and returns the world communicator; null with `error`
/// set when MPI cannot start. MPI is finalized when it is destroyed.
std::unique_ptr<Communicator> createMpiCommunicator(bool deterministic, std::string &error);

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_MPICOMMUNICATOR_H
