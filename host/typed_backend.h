// moreau host — buffers, parameters and views for one scalar type, shared by the CPU and
// CUDA backends; they supply memory (Memory) and the launches (launch_step, launch_reset).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "host/backend.h"
#include "kernels/step.h"

namespace moreau {


// Parameters of width 1 and their defaults (docs/contact.md for the contact ones).
struct ScalarParam {
  const char* name;
  double default_value;
};
constexpr ScalarParam kScalarParams[] = {
    {"added_base_mass", 0.0}, {"friction", 1.0},  {"contact_kn", 1e4},   {"contact_kd", -1.0},
    {"contact_zeta", 1.0},    {"smooth_k", 300.0}, {"smooth_gmax", 0.02}, {"frictionloss_scale", 1.0},
    {"spin_friction", 0.0},   {"rolling_friction", 0.0}, {"damping_scale", 1.0}, {"armature_scale", 1.0},
    {"terrain_x", 0.0},       {"terrain_y", 0.0}};

template <class S>
class TypedBackend : public Backend {
 public:
  TypedBackend(const Model& model, const SimulatorOptions& options, std::unique_ptr<Memory> memory)
      : model_(model), options_(options), packed_(model_), mem_(std::move(memory)) {
    const int n = options_.n_env;
    // Total bytes first, so that a batch too large fails with one clear message.
    const size_t per_env = sizeof(S) * (model_.nq + model_.nv + model_.nu + 2 * model_.ncon + 2) +
                           sizeof(int32_t) * (model_.ncon + 2);
    const size_t model_bytes = sizeof(S) * packed_.reals.size() + sizeof(int) * packed_.ints.size();
    mem_->check_capacity(per_env * static_cast<size_t>(n) + model_bytes, n);
    if (n > max_environments(model_))
      throw Error("Simulator: n_env: expected at most " + std::to_string(max_environments(model_)) +
                  " for this robot (the kernels' field offsets are 32-bit: max_environments), got " + std::to_string(n));
    // the options checked before anything is allocated (a throwing constructor frees nothing)
    const ContactOptions& c = options_.contact;
    if (c.max_iterations < 1)
      throw Error("Simulator: contact.max_iterations: expected >= 1, got " + std::to_string(c.max_iterations));
    if (c.tolerance < 0 || !std::isfinite(c.tolerance))
      throw Error("Simulator: contact.tolerance: expected >= 0 (0 = default), got " + std::to_string(c.tolerance));
    if (c.substeps < 0)
      throw Error("Simulator: contact.substeps: expected >= 0 (0 = automatic), got " + std::to_string(c.substeps));
    if (c.condim != 4 && c.condim != 6)
      throw Error("Simulator: contact.condim: expected 4 (spin friction) or 6 (spin and rolling friction), got " +
                  std::to_string(c.condim));
    d_reals_ = alloc<S>(packed_.reals.size());
    d_ints_ = alloc<int>(packed_.ints.size());
    mem_->upload(d_reals_, packed_.reals.data(), sizeof(S) * packed_.reals.size());
    mem_->upload(d_ints_, packed_.ints.data(), sizeof(int) * packed_.ints.size());
    view_ = packed_.view(d_reals_, d_ints_);
    d_q_ = alloc<S>(static_cast<size_t>(n) * model_.nq);
    d_v_ = alloc<S>(static_cast<size_t>(n) * model_.nv);
    d_action_ = alloc<S>(static_cast<size_t>(n) * model_.nu);
    d_time_ = alloc<S>(n);
    d_status_ = alloc<int32_t>(n);
    d_con_gap_ = alloc<S>(static_cast<size_t>(n) * model_.ncon);
    d_con_impulse_ = alloc<S>(static_cast<size_t>(n) * model_.ncon);
    d_con_active_ = alloc<int32_t>(static_cast<size_t>(n) * model_.ncon);
    d_solver_iterations_ = alloc<int32_t>(n);
    d_solver_residual_ = alloc<S>(n);
    // contact information reads zero until a step with contact writes it
    fill_zero(d_con_gap_, sizeof(S) * n * model_.ncon);
    fill_zero(d_con_impulse_, sizeof(S) * n * model_.ncon);
    fill_zero(d_con_active_, sizeof(int32_t) * n * model_.ncon);
    fill_zero(d_solver_iterations_, sizeof(int32_t) * n);
    fill_zero(d_solver_residual_, sizeof(S) * n);
    set_param("kp", model_.actuator_kp.data(), 1, model_.nu);
    set_param("kd", model_.actuator_kd.data(), 1, model_.nu);
    set_param("motor_strength", std::vector<double>(model_.nu, 1.0).data(), 1, model_.nu);
    for (const ScalarParam& sp : kScalarParams) set_param(sp.name, &sp.default_value, 1, 1);
    update_substeps();
  }

  int substeps() const override { return substeps_; }

  ~TypedBackend() override {
    for (void* p : allocations_) mem_->release(p);
  }

  const Model& model() const override { return model_; }
  const SimulatorOptions& options() const override { return options_; }

  View q() override { return view_of(d_q_, model_.nq); }
  View v() override { return view_of(d_v_, model_.nv); }
  View action() override { return view_of(d_action_, model_.nu); }
  View time() override { return view_of(d_time_, 1); }
  View status() override { return view_of(d_status_, 1); }
  View contact_gap() override { return view_of(d_con_gap_, model_.ncon); }
  View contact_impulse() override { return view_of(d_con_impulse_, model_.ncon); }
  View contact_active() override { return view_of(d_con_active_, model_.ncon); }
  View solver_iterations() override { return view_of(d_solver_iterations_, 1); }
  View solver_residual() override { return view_of(d_solver_residual_, 1); }

  View param(const std::string& name) override {
    check_rolling(name);
    const ParamBuffer& p = find_param(name);
    View view = view_of(p.data, p.width, p.len);
    return view;
  }

  std::vector<std::string> param_names() const override {
    std::vector<std::string> names;
    for (const auto& kv : params_) names.push_back(kv.first);
    return names;
  }

  void set_param(const std::string& name, const double* values, int len, int width) override {
    const int n = options_.n_env;
    const int expected_width = param_width(name);
    if (width != expected_width)
      throw Error("set_param('" + name + "'): wrong width: expected " + std::to_string(expected_width) +
                  ", got " + std::to_string(width));
    if (len != 1 && len != n)
      throw Error("set_param('" + name + "'): wrong length: expected 1 or n_env = " + std::to_string(n) +
                  ", got " + std::to_string(len));
    for (size_t k = 0; k < static_cast<size_t>(len) * width; ++k) {
      if (!std::isfinite(values[k]))
        throw Error("set_param('" + name + "'): value " + std::to_string(k) + " is not finite");
      check_param_range(name, k, values[k]);
      if (values[k] != 0) check_rolling(name);
    }
    ParamBuffer& p = params_[name];
    if (p.len != len || p.width != width) {
      if (p.data) release(p.data);
      p.data = alloc<S>(std::max<size_t>(1, static_cast<size_t>(len) * width));
      p.len = len;
      p.width = width;
    }
    upload_field_major(p.data, values, len, width);
    if (name == "contact_kn") update_substeps(values, len);
  }

  void set_state(const double* q, const double* v) override {
    upload_field_major(d_q_, q, options_.n_env, model_.nq);
    upload_field_major(d_v_, v, options_.n_env, model_.nv);
  }
  void get_state(double* q, double* v) override {
    download_row_major(q, d_q_, options_.n_env, model_.nq);
    download_row_major(v, d_v_, options_.n_env, model_.nv);
  }
  void set_action(const double* action) override {
    upload_field_major(d_action_, action, options_.n_env, model_.nu);
  }
  void get_status(int32_t* status) override {
    mem_->download(status, d_status_, sizeof(int32_t) * options_.n_env);
  }

  void step(int k) override {
    if (k < 0) throw Error("step: expected k >= 0, got " + std::to_string(k));
    if (k > 0) launch_step(view_, settings(), params(), batch(), k);
  }

  void step_pure(const void* q_in, const void* v_in, const void* action, void* q_out, void* v_out,
                 int32_t* status) override {
    kern::PureStep<S> io{};
    set_inputs(io, q_in, v_in, action, status);
    io.q_out = static_cast<S*>(q_out);
    io.v_out = static_cast<S*>(v_out);
    launch_pure(view_, settings(), params(), io, false);
  }

  void step_adjoint(const void* q_in, const void* v_in, const void* action, int rows, const void* adj_q_out,
                    const void* adj_v_out, const Simulator::Gradients& grads, int32_t* status,
                    bool accumulate) override {
    if (!grads.q || !grads.v || (!grads.action && model_.nu > 0))
      throw Error("step_adjoint: gradients q, v and action: expected buffers, got null");
    if (rows < 1) throw Error("step_adjoint_rows: rows: expected >= 1, got " + std::to_string(rows));
    const size_t n = options_.n_env;
    // blocks of at most max_adjoint_rows() rows; row r of a buffer of width w at r * n * w
    for (int r0 = 0; r0 < rows; r0 += max_adjoint_rows()) {
      auto at = [&](const void* p, int width) {
        return p ? static_cast<S*>(const_cast<void*>(p)) + r0 * n * width : nullptr;
      };
      kern::PureStep<S> io{};
      set_inputs(io, q_in, v_in, action, status);
      io.rows = std::min(rows - r0, max_adjoint_rows());
      io.adj_q_out = at(adj_q_out, model_.nq);
      io.adj_v_out = at(adj_v_out, model_.nv);
      io.adj_q_in = at(grads.q, model_.nq);
      io.adj_v_in = at(grads.v, model_.nv);
      io.adj_action = at(grads.action, model_.nu);
      io.adj_kp = at(grads.kp, model_.nu);
      io.adj_kd = at(grads.kd, model_.nu);
      io.adj_added_base_mass = at(grads.added_base_mass, 1);
      io.adj_friction = at(grads.friction, 1);
      io.adj_contact_kn = at(grads.contact_kn, 1);
      io.adj_smooth_k = at(grads.smooth_k, 1);
      io.accumulate = accumulate;
      if (r0 > 0) {  // the status of later blocks is OR-ed into the first's
        std::vector<int32_t> first(n), later(n);
        mem_->download(first.data(), status, sizeof(int32_t) * n);
        launch_pure(view_, settings(), params(), io, true);
        mem_->download(later.data(), status, sizeof(int32_t) * n);
        for (size_t e = 0; e < n; ++e) later[e] |= first[e];
        mem_->upload(status, later.data(), sizeof(int32_t) * n);
      } else {
        launch_pure(view_, settings(), params(), io, true);
      }
    }
  }

  void rollout(int horizon, const void* actions) override {
    if (horizon < 1) throw Error("rollout: horizon: expected >= 1, got " + std::to_string(horizon));
    const size_t n = options_.n_env, sq = n * model_.nq, sv = n * model_.nv, su = n * model_.nu;
    for (void* p : {static_cast<void*>(r_q_), static_cast<void*>(r_v_), static_cast<void*>(r_u_),
                    static_cast<void*>(r_status_)})
      if (p) release(p);
    r_q_ = alloc<S>((horizon + 1) * sq);
    r_v_ = alloc<S>((horizon + 1) * sv);
    r_u_ = alloc<S>(horizon * su);
    r_status_ = alloc<int32_t>(n);
    horizon_ = horizon;
    mem_->copy(r_q_, d_q_, sizeof(S) * sq);
    mem_->copy(r_v_, d_v_, sizeof(S) * sv);
    mem_->copy(r_u_, actions, sizeof(S) * horizon * su);
    mem_->copy(r_status_, d_status_, sizeof(int32_t) * n);
    for (int t = 0; t < horizon; ++t) {
      kern::PureStep<S> io{};
      set_inputs(io, r_q_ + t * sq, r_v_ + t * sv, r_u_ + t * su, r_status_);
      io.q_out = r_q_ + (t + 1) * sq;
      io.v_out = r_v_ + (t + 1) * sv;
      io.accumulate = 1;
      launch_pure(view_, settings(), params(), io, false);
    }
    mem_->copy(d_q_, r_q_ + horizon * sq, sizeof(S) * sq);
    mem_->copy(d_v_, r_v_ + horizon * sv, sizeof(S) * sv);
    mem_->copy(d_status_, r_status_, sizeof(int32_t) * n);
  }

  void rollout_backward(void* adj_q, void* adj_v, void* adj_actions, const Simulator::Gradients& params_out) override {
    if (horizon_ == 0) throw Error("rollout_backward: no recorded rollout: call rollout(horizon, actions) first");
    const size_t n = options_.n_env, sq = n * model_.nq, sv = n * model_.nv, su = n * model_.nu;
    fill_zero(adj_actions, sizeof(S) * horizon_ * su);
    fill_zero(params_out.kp, sizeof(S) * n * model_.nu);
    fill_zero(params_out.kd, sizeof(S) * n * model_.nu);
    for (void* p : {params_out.added_base_mass, params_out.friction, params_out.contact_kn, params_out.smooth_k})
      fill_zero(p, sizeof(S) * n);
    S* aq = static_cast<S*>(adj_q);
    S* av = static_cast<S*>(adj_v);
    S* au = static_cast<S*>(adj_actions);
    for (int t = horizon_ - 1; t >= 0; --t) {
      kern::PureStep<S> io{};
      set_inputs(io, r_q_ + t * sq, r_v_ + t * sv, r_u_ + t * su, r_status_);
      io.adj_q_out = aq + (t + 1) * sq;
      io.adj_v_out = av + (t + 1) * sv;
      io.adj_q_in = aq + t * sq;
      io.adj_v_in = av + t * sv;
      io.adj_action = au + t * su;
      set_param_grads(io, params_out);
      io.accumulate = 1;
      launch_pure(view_, settings(), params(), io, true);
    }
  }

  int rollout_horizon() const override { return horizon_; }

  void reset(const int32_t* env_ids, int count) override {
    for (int i = 0; i < count; ++i)
      if (env_ids[i] < 0 || env_ids[i] >= options_.n_env)
        throw Error("reset: env id " + std::to_string(env_ids[i]) + " at position " + std::to_string(i) +
                    " out of range: expected 0 <= id < " + std::to_string(options_.n_env));
    if (count > 0) launch_reset(view_, batch(), env_ids, count);
  }
  void reset_where(const uint8_t* mask) override { launch_reset_where(view_, batch(), mask); }

  void synchronize() override { mem_->synchronize(); }

 protected:
  // Runs kern::control_step k times on every environment.
  virtual void launch_step(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg,
                           const kern::Params<S>& p, const kern::Batch<S>& b, int k) = 0;
  // The most adjoint rows (PureStep::rows) one launch_pure takes.
  virtual int max_adjoint_rows() const = 0;
  // Runs kern::pure_step (adjoint false) or kern::adj_pure_step (true) on every environment.
  virtual void launch_pure(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                           const kern::PureStep<S>& io, bool adjoint) = 0;
  // Runs kern::reset_env on the listed environments (host array of valid ids).
  virtual void launch_reset(const kern::ModelView<S>& m, const kern::Batch<S>& b, const int32_t* env_ids,
                            int count) = 0;
  // Runs kern::reset_env on every environment e whose mask[e] (n_env bytes on the device) is
  // nonzero, reading the mask where it is.
  virtual void launch_reset_where(const kern::ModelView<S>& m, const kern::Batch<S>& b, const uint8_t* mask) = 0;

  kern::Params<S> params() const {
    auto get = [&](const char* name) {
      const ParamBuffer& p = params_.at(name);
      return kern::Param<S>{p.data, p.len};
    };
    return {get("kp"),       get("kd"),           get("added_base_mass"), get("friction"), get("contact_kn"),
            get("contact_kd"), get("contact_zeta"), get("smooth_k"),        get("smooth_gmax"),
            get("motor_strength"), get("frictionloss_scale"), get("spin_friction"), get("rolling_friction"),
            get("damping_scale"), get("armature_scale"), get("terrain_x"), get("terrain_y")};
  }
  kern::Batch<S> batch() const {
    return {options_.n_env,         d_q_,        d_v_,           d_action_, d_status_, d_time_, d_con_gap_,
            d_con_impulse_, d_con_active_, d_solver_iterations_, d_solver_residual_};
  }
  kern::ContactSettings<S> settings() const {
    const ContactOptions& c = options_.contact;
    const S tolerance = c.tolerance > 0 ? static_cast<S>(c.tolerance) : S(sizeof(S) == 4 ? 2e-5 : 1e-6);
    return {static_cast<int>(c.mode), c.max_iterations, tolerance, c.speculative ? 1 : 0, substeps_};
  }

  // Whether the solve has room for rolling friction's rows (contact condim 6): the size class the
  // kernels run in (kern::with_dims).
  bool rolling_rows() const { return options_.contact.condim == 6; }

  Memory& memory() override { return *mem_; }
  // Device buffers freed with the backend (or earlier, by release).
  template <class T>
  T* alloc(size_t count) {
    void* p = mem_->alloc(std::max<size_t>(1, count) * sizeof(T));
    allocations_.push_back(p);
    return static_cast<T*>(p);
  }
  void release(void* p) {
    mem_->release(p);
    allocations_.erase(std::find(allocations_.begin(), allocations_.end(), p));
  }

 private:
  struct ParamBuffer {
    S* data = nullptr;
    int len = 0, width = 0;
  };

  // Width of a known parameter; throws for an unknown name.
  // The physical range of each parameter: gains, friction (and spin and rolling friction), ζ, smooth g_max ≥ 0; stiffness and
  // smooth k > 0; k_d ≥ 0 or −1 (from ζ); the base mass plus the added mass > 0.
  void check_param_range(const std::string& name, size_t k, double x) const {
    const double base_mass = model_.body_mass.empty() ? 0 : model_.body_mass[0];
    const auto num = [](double v) {
      std::ostringstream o;
      o << v;
      return o.str();
    };
    std::string expected;
    if ((name == "kp" || name == "kd" || name == "friction" || name == "contact_zeta" || name == "smooth_gmax" ||
         name == "motor_strength" || name == "frictionloss_scale" || name == "spin_friction" ||
         name == "rolling_friction" ||
         name == "damping_scale" || name == "armature_scale") &&
        !(x >= 0))
      expected = ">= 0";
    if ((name == "contact_kn" || name == "smooth_k") && !(x > 0)) expected = "> 0";
    if (name == "contact_kd" && !(x >= 0 || x == -1)) expected = ">= 0, or -1 (from contact_zeta)";
    if (name == "added_base_mass" && !(base_mass + x > 0))
      expected = "> -" + num(base_mass) + " (the base's mass " + num(base_mass) + " kg plus it > 0)";
    if (!expected.empty())
      throw Error("set_param('" + name + "'): value " + std::to_string(k) + ": expected " + expected + ", got " + num(x));
  }

  // rolling_friction acts only where the solve has room for its rows: reading or writing it on a
  // condim-4 simulator is an error (the defaults, 0, are written at construction).
  void check_rolling(const std::string& name) const {
    if (name == "rolling_friction" && !rolling_rows())
      throw Error("rolling_friction: this simulator's contact.condim is 4 (no rolling friction rows): expected a "
                  "simulator made with contact.condim = 6");
  }

  int param_width(const std::string& name) const {
    if (name == "kp" || name == "kd" || name == "motor_strength") return model_.nu;
    for (const ScalarParam& sp : kScalarParams)
      if (name == sp.name) return 1;
    std::string known = "kd, kp, motor_strength";
    for (const ScalarParam& sp : kScalarParams) known += std::string(", ") + sp.name;
    throw Error("unknown parameter '" + name + "': expected one of " + known);
  }

  // Soft contact: explicit springs need (h/n) sqrt(k_n/m) ≤ 1/2, with m a quarter of the
  // lightest body that carries a contact point (a lower bound on a point's effective mass).
  void update_substeps(const double* kn = nullptr, int len = 0) {
    substeps_ = options_.contact.substeps > 0 ? options_.contact.substeps : 1;
    if (options_.contact.substeps > 0 || options_.contact.mode != ContactMode::Soft || model_.ncon == 0) return;
    double k_max = 0;
    if (!kn)
      for (const ScalarParam& sp : kScalarParams)
        if (std::string(sp.name) == "contact_kn") k_max = sp.default_value;
    for (int i = 0; i < len; ++i) k_max = std::max(k_max, kn[i]);
    double m_min = 1e300;
    for (int k = 0; k < model_.ncon; ++k) m_min = std::min(m_min, model_.body_mass[model_.con_body[k]] / 4);
    substeps_ = std::max(1, static_cast<int>(std::ceil(2 * model_.timestep * std::sqrt(k_max / m_min))));
  }
  const ParamBuffer& find_param(const std::string& name) const {
    param_width(name);
    return params_.at(name);
  }


  template <class T>
  View view_of(T* data, int width, int rows = -1) {
    View view;
    view.data = data;
    view.dtype = std::is_same<T, int32_t>::value ? DType::Int32 : (sizeof(S) == 4 ? DType::Float32 : DType::Float64);
    view.device = mem_->device();
    view.device_id = mem_->device_id();
    view.shape[0] = rows < 0 ? options_.n_env : rows;
    view.shape[1] = width;
    view.strides[0] = 1;
    view.strides[1] = view.shape[0];
    return view;
  }

  void set_inputs(kern::PureStep<S>& io, const void* q, const void* v, const void* action, int32_t* status) const {
    io.n_env = options_.n_env;
    io.q_in = static_cast<const S*>(q);
    io.v_in = static_cast<const S*>(v);
    io.action = static_cast<const S*>(action);
    io.status = status;
    io.rows = 1;
  }
  static void set_param_grads(kern::PureStep<S>& io, const Simulator::Gradients& g) {
    io.adj_kp = static_cast<S*>(g.kp);
    io.adj_kd = static_cast<S*>(g.kd);
    io.adj_added_base_mass = static_cast<S*>(g.added_base_mass);
    io.adj_friction = static_cast<S*>(g.friction);
    io.adj_contact_kn = static_cast<S*>(g.contact_kn);
    io.adj_smooth_k = static_cast<S*>(g.smooth_k);
  }
  void fill_zero(void* dst, size_t bytes) {
    if (dst) mem_->zero(dst, bytes);
  }

  // Host row-major (rows x width) doubles -> device field-major S.
  void upload_field_major(S* dst, const double* src, int rows, int width) {
    std::vector<S> staging(static_cast<size_t>(rows) * width);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < width; ++k) staging[static_cast<size_t>(k) * rows + r] = static_cast<S>(src[static_cast<size_t>(r) * width + k]);
    mem_->upload(dst, staging.data(), sizeof(S) * staging.size());
  }
  void download_row_major(double* dst, const S* src, int rows, int width) {
    std::vector<S> staging(static_cast<size_t>(rows) * width);
    mem_->download(staging.data(), src, sizeof(S) * staging.size());
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < width; ++k) dst[static_cast<size_t>(r) * width + k] = staging[static_cast<size_t>(k) * rows + r];
  }

  Model model_;
  SimulatorOptions options_;
  PackedModel<S> packed_;
  std::unique_ptr<Memory> mem_;
  std::vector<void*> allocations_;
  S* d_reals_ = nullptr;
  int* d_ints_ = nullptr;
  kern::ModelView<S> view_{};
  S* d_q_ = nullptr;
  S* d_v_ = nullptr;
  S* d_action_ = nullptr;
  S* d_time_ = nullptr;
  int32_t* d_status_ = nullptr;
  S* d_con_gap_ = nullptr;
  S* d_con_impulse_ = nullptr;
  int32_t* d_con_active_ = nullptr;
  int32_t* d_solver_iterations_ = nullptr;
  S* d_solver_residual_ = nullptr;
  int substeps_ = 1;
  // recorded rollout: (horizon + 1) states, horizon actions, statuses
  int horizon_ = 0;
  S* r_q_ = nullptr;
  S* r_v_ = nullptr;
  S* r_u_ = nullptr;
  int32_t* r_status_ = nullptr;
  std::map<std::string, ParamBuffer> params_;
};

}  // namespace moreau
