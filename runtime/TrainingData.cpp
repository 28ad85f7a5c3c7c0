//===- TrainingData.cpp - Examples, batches and token windows -------------===//
#include "TrainerImpl.h"

#include "rewire/Support/ReadFile.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace rewire::runtime {

TrainStatus readTokens(const std::string &path, bool text, const std::string &dtype,
                       std::vector<int64_t> &out) {
  std::string bytes;
  if (auto err = readRegularFile(path, bytes))
    return trainError(TrainFailure::io, *err);
  if (text) {
    for (unsigned char c : bytes)
      out.push_back(c);
    return std::nullopt;
  }
  size_t w = dtype == "uint16" ? 2 : 4;
  if (bytes.size() % w)
    return trainError(TrainFailure::data,
                      "'" + path + "' is not a whole number of " + dtype + " tokens");
  for (size_t i = 0; i < bytes.size(); i += w) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + i, w);
    out.push_back(v);
  }
  return std::nullopt;
}

std::vector<int64_t> EpochOrder::batchRows(int64_t t, int64_t batch, int64_t n) {
  std::vector<int64_t> rows(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    int64_t k = t * batch + i;
    int64_t e = k / n, pos = k % n;
    if (!shuffle) {
      rows[static_cast<size_t>(i)] = pos;
      continue;
    }
    if (epoch != e || perm.size() != static_cast<size_t>(n)) {
      perm.resize(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      std::mt19937_64 rng(static_cast<uint64_t>(seed) * 1000003u + static_cast<uint64_t>(e));
      for (int64_t j = n - 1; j > 0; --j)
        std::swap(perm[static_cast<size_t>(j)],
                  perm[static_cast<size_t>(rng() % static_cast<uint64_t>(j + 1))]);
      epoch = e;
    }
    rows[static_cast<size_t>(i)] = perm[static_cast<size_t>(pos)];
  }
  return rows;
}

void gatherRows(const HostTensor &data, const std::vector<int64_t> &rows, HostTensor &out) {
  size_t rowBytes = data.data.size() / static_cast<size_t>(data.shape[0]);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.data.data() + i * rowBytes,
                data.data.data() + static_cast<size_t>(rows[i]) * rowBytes, rowBytes);
}

void fillWindows(const std::vector<int64_t> &from, const std::vector<int64_t> &rows,
                 int64_t seqLen, HostTensor &ids, HostTensor &targets) {
  auto *x = reinterpret_cast<int64_t *>(ids.data.data());
  auto *y = reinterpret_cast<int64_t *>(targets.data.data());
  size_t t = static_cast<size_t>(seqLen);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < t; ++j) {
      size_t at = static_cast<size_t>(rows[i]) * t + j;
      x[i * t + j] = from[at];
      y[i * t + j] = from[at + 1];
    }
}

} // namespace rewire::runtime
