// moreau kernels — the team of lanes that steps one environment (docs/gpu.md, "The next layout").
// A kernel function spreads the independent parts of its work over the team:
//  - for_each(m, n, f): f(i) for every i in 0..n−1;
//  - down_tree(m, f): f(i) for every body i, each after its parent;
//  - up_tree(m, f): f(i) for every body i, each after its children;
//  - single(m, f): f() once (on a GPU: one lane, the others waiting).
// An f(i) writes only what is i's (its body's or its row's entries of the scratch) and reads
// nothing that another i of the same call writes, so that a team may run the i of a call, or
// the bodies of one depth level, on different lanes at once, with a barrier before and after
// each call. Every lane runs the code between the calls: it may read the team's scratch (the
// barrier before the next call keeps a lane from overwriting what another still reads) and
// write only the lane's own locals (values every lane computes alike). An array that one call writes and another reads is the team's:
// TeamArray<D, T, N> (a local array on one lane; on a team of lanes, a slice of the team's
// shared arena, taken on construction and given back on destruction in stack order).
// The team is the size class's `Team` (Teamed<D, T>), SerialTeam where D names none; the CUDA
// team layout's is TileTeam (cuda/tile_team.cuh), tests/team_test.cc's ThreadTeam one thread per lane.
#pragma once

#include <type_traits>

#include "kernels/model_view.h"

namespace moreau {
namespace kern {

// One lane, no barrier: the loops in index order (a body's parent has a lower index).
struct SerialTeam {
  template <class T, int N>
  struct Array {
    T data[N];
    MOREAU_HD_SMALL operator T*() { return data; }
    MOREAU_HD_SMALL operator const T*() const { return data; }
  };
  template <class F>
  static MOREAU_HD_SMALL void for_each(int n, F&& f) {
    for (int i = 0; i < n; ++i) f(i);
  }
  template <class S, class F>
  static MOREAU_HD_SMALL void down_tree(const ModelArrays<S>& m, F&& f) {
    for (int i = 0; i < m.nbody; ++i) f(i);
  }
  template <class S, class F>
  static MOREAU_HD_SMALL void up_tree(const ModelArrays<S>& m, F&& f) {
    for (int i = m.nbody - 1; i >= 0; --i) f(i);
  }
  template <class F>
  static MOREAU_HD_SMALL void single(F&& f) {
    f();
  }
};

// Size class D stepped by team T.
template <class D, class T>
struct Teamed : D {
  using Team = T;
};

template <class D, class = void>
struct TeamOf {
  using type = SerialTeam;
};
template <class D>
struct TeamOf<D, std::void_t<typename D::Team>> {
  using type = typename D::Team;
};

// The team of size class D.
template <class D>
using TeamFor = typename TeamOf<D>::type;

// Whether team T runs on one lane: work divided only so that lanes can share it (the mass
// matrix's factorisation by branches) runs undivided there.
template <class T>
constexpr bool one_lane() {
  return std::is_same_v<T, SerialTeam>;
}

// N values of T that the team's calls share for the enclosing scope.
template <class D, class T, int N>
using TeamArray = typename TeamFor<D>::template Array<T, N>;

template <class S, class D, class F>
MOREAU_HD_SMALL void for_each(const ModelView<S, D>&, int n, F&& f) {
  TeamFor<D>::for_each(n, f);
}
template <class S, class D, class F>
MOREAU_HD_SMALL void down_tree(const ModelView<S, D>& m, F&& f) {
  TeamFor<D>::down_tree(m, f);
}
template <class S, class D, class F>
MOREAU_HD_SMALL void up_tree(const ModelView<S, D>& m, F&& f) {
  TeamFor<D>::up_tree(m, f);
}
template <class S, class D, class F>
MOREAU_HD_SMALL void single(const ModelView<S, D>&, F&& f) {
  TeamFor<D>::single(f);
}

// x + Σ_c term(c) over body i's children c, by descending index (the order in which a backward
// sweep over the bodies reaches them): a backward sweep's gather, which an up_tree call runs for
// body i once its children are done.
template <class S, class D, class T, class F>
MOREAU_HD_SMALL T sum_children(const ModelView<S, D>& m, int i, T x, F&& term) {
  for (int c = m.child_adr[i], end = m.child_adr[i + 1]; c < end; ++c) x += term(m.child_body[c]);
  return x;
}

}  // namespace kern
}  // namespace moreau
