// moreau — batched simulator: n_env instances of one Model on one device.
//
// Buffers are environment-major structure-of-arrays: element k of environment e of a field
// of width w lives at index k * n_env + e. A View describes a buffer so that Python (DLPack)
// can wrap it without a copy; its logical shape is (n_env, w) with strides (1, n_env).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "moreau/model.h"

namespace moreau {

enum class Device : int { CPU = 0, CUDA = 1 };
enum class DType : int { Float32 = 0, Float64 = 1, Int32 = 2 };

const char* device_name(Device d);
const char* dtype_name(DType t);
bool cuda_available();  // built with CUDA and a device is present

// Per-environment status bits (status buffer, int32). A non-zero status freezes the
// environment: it is not stepped again until reset.
enum Status : int32_t {
  kStatusOk = 0,
  kStatusNanState = 1 << 0,      // non-finite q or v (on input or after a step)
  kStatusNanAction = 1 << 1,     // non-finite action
  kStatusSingularMass = 1 << 2,  // mass matrix not positive definite
  kStatusSolverNotConverged = 1 << 3,  // contact solve hit its iteration cap
};

struct View {
  void* data = nullptr;
  DType dtype = DType::Float32;
  Device device = Device::CPU;
  int device_id = 0;
  int64_t shape[2] = {0, 0};    // (rows, cols)
  int64_t strides[2] = {0, 0};  // in elements
};

struct SimulatorOptions {
  int n_env = 1;
  Device device = Device::CPU;
  DType dtype = DType::Float32;  // Float64 on the CPU only
  int n_threads = 0;             // CPU: 0 = all hardware threads
  int cuda_device = 0;
  void* cuda_stream = nullptr;   // cudaStream_t; null = the default stream
  double timestep = 0;           // 0 = the model's
  int decimation = 0;            // 0 = the model's
};

class Backend;

class Simulator {
 public:
  Simulator(const Model& model, const SimulatorOptions& options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Model& model() const;
  const SimulatorOptions& options() const;
  int n_env() const;

  // Views of the device buffers: q (n_env x nq), v (n_env x nv), action (n_env x nu),
  // status (n_env x 1, int32), time (n_env x 1, seconds since reset).
  View q();
  View v();
  View action();
  View status();
  View time();

  // Per-environment parameters: a (len x width) array with len 1 or n_env; environment e
  // reads row e % len. Names: "kp", "kd" (width nu), "added_base_mass" (width 1).
  View param(const std::string& name);
  void set_param(const std::string& name, const double* values, int len, int width);
  std::vector<std::string> param_names() const;

  // Host copies (row-major, n_env x width, double) — for tests and simple users.
  void set_state(const double* q, const double* v, int n_env);
  void get_state(double* q, double* v, int n_env) const;
  void set_action(const double* action, int n_env);
  void get_status(int32_t* status, int n_env) const;

  // Advances every environment whose status is ok by k control steps.
  void step(int k = 1);
  // Sets the listed environments to the model's default state, zero action, status 0, time 0.
  void reset(const int32_t* env_ids, int count);
  void reset_all();
  // Waits for queued device work (no-op on the CPU).
  void synchronize();

 private:
  std::unique_ptr<Backend> backend_;
};

}  // namespace moreau
