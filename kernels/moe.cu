// MoE (docs/architecture.md §3.8) on the GPU: the router, the fused experts and the combine.
//
// route            grid rows, block 256, dynamic smem 2·E floats
//   scores (sqrtsoftplus / sigmoid / softmax) in f32; hash rows take tid2eid[token] as stored,
//   learned rows the k best of score + bias by rank (rank_e = #{j: sel_j > sel_e or (== and j < e)}:
//   ties to the lower index, exactly the CPU's stable top-k), ranked among the candidates that
//   segments of 32 experts leave (form 0; form 1 counts over all E pairs: the same bits); the
//   weights are summed in selection order and renormalised as the CPU does; eid/ew are written in
//   ascending expert id order (the order the experts are summed in).
// experts_fused    grouped launches for all (row, expert) pairs of all rows:
//   group  (1 block)  pairs sorted by (expert, pair), cut into groups of ≤ 4 rows of one expert
//                     (an expert's rows split as evenly as can be)
//   up     grid (groups, ceil(I/8))  block 256: h = swiglu(x·w1ᵀ, x·w3ᵀ) for the group's rows
//   down   grid (groups, ceil(D/8))  block 256: eo = h·w2ᵀ
//   rounds of ≥ 2 rows: the groups in two lists, each with its own up and down kernel (groups of
//   ≤ 2 rows; groups of 3-4), both in the wide form (w1's and w3's rows share each activation load)
//   one row (a decode step, ExpertsArgs::sync given): one persistent launch instead, up then down
//   tiles of each pair in one grid (moe_one_row_kernel), no grouping.
//   Each element is dot_rows (dot_exact.cuh), the same fixed-order dot as linear_exact: a pair's
//   output does not depend on which other rows share its expert, and equals the per-expert path
//   (linear_exact on the gathered rows) by bits. Packed experts (FP8/FP4, scales stacked like the
//   codes) are decoded as they are loaded (dot_exact.cuh stack_row).
// moe_combine      out = (Σ_{slot asc} eo·ew) + shared, one thread per element.
#include <algorithm>

#include "ab_switch.h"
#include "common.cuh"
#include "device_caps.h"
#include "dot_exact.cuh"
#include "launch.cuh"
#include "moe_combine.cuh"
#include "ops.h"

namespace memra::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / kWarp;
constexpr int kMaxK = 16;
constexpr int kGroupRows = 4;
constexpr int kSmallRows = 2;     // the small list's groups (moe_group_kernel), one kernel of their own
constexpr int kGroupBlocks = 128;  // blocks along x of the small list's grids, striding over its groups

constexpr int kBiasPer = 4;  // bias values per thread loaded before pdl_begin() (E ≤ 1024)

// #{j in [j0, j0 + n) : sel_j ≻ v}, v = sel_e, where j ≻ e means sel_j > sel_e or (sel_j == sel_e and
// j < e): four independent sums over float4 reads where `vec` (sel + j0 16-byte aligned), the rest
// one at a time (one sum over one-at-a-time reads was a chain of ~2000 dependent instructions per
// thread over all E, ncu run 83). Form 1's rank over all E; form 0's within a segment.
template <int kUnroll>
__device__ __forceinline__ int rank_among(const float* sel, int j0, int n, bool vec, float v, int e) {
  int r4[4] = {0, 0, 0, 0};
  int j = 0;
  if (vec) {
    const float4* s4 = reinterpret_cast<const float4*>(sel + j0);
#pragma unroll kUnroll
    for (; j + 4 <= n; j += 4) {
      const float4 q = s4[j / 4];
      const int i = j0 + j;
      r4[0] += (q.x > v) || (q.x == v && i < e);
      r4[1] += (q.y > v) || (q.y == v && i + 1 < e);
      r4[2] += (q.z > v) || (q.z == v && i + 2 < e);
      r4[3] += (q.w > v) || (q.w == v && i + 3 < e);
    }
  }
  for (; j < n; ++j) r4[0] += (sel[j0 + j] > v) || (sel[j0 + j] == v && j0 + j < e);
  return r4[0] + r4[1] + r4[2] + r4[3];
}

constexpr int kSegment = 32;                               // experts a form-0 segment ranks among
constexpr int kMaxSlots = (1024 / kSegment) * (kMaxK + 1);  // form 0's candidate slots (E ≤ 1024)
constexpr int kSlotThreads = 4;                            // threads that rank one candidate together

// Form 0 (the default) and form 1 (the all-pairs count it replaced; the ops check's bit reference)
// select the same experts and write the same bits. Form 0 ranks each expert within its segment of 32
// first; those of segment rank ≤ k are the candidates (k + 1 a segment), and a candidate's rank
// among the candidates is its rank among all E wherever that rank is ≤ k (every expert ≻ it is then
// ranked < k in its own segment too, so is a candidate), and > k elsewhere: E·32 + (E/32·(k+1))²
// comparisons instead of E² (ncu run 124: form 1's count was ~3.8 of its 6.75 us). Its tail runs on
// warp 0's lanes (weights, the ascending-id order by a count, the scale by a warp max) where form 1's
// runs on thread 0. NaN scores have no rank order; the selection is then unspecified in both forms.
template <int kForm>
__global__ void __launch_bounds__(kBlock) route_kernel(RouteArgs a) {
  // The bias is a weight (nothing writes it during a forward): its round trip runs beside the
  // router's tail instead of after the scores.
  float bias_pre[kBiasPer];
#pragma unroll
  for (int u = 0; u < kBiasPer; ++u) {
    const int e = threadIdx.x + u * kBlock;
    bias_pre[u] = !a.tid2eid && e < a.E ? a.bias[e] : 0.0f;
  }
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float, sm, 4);
  float* score = sm;      // [E]
  float* sel = sm + a.E;  // [E]
  __shared__ float scratch[kWarps];
  __shared__ int idx[kMaxK];
  __shared__ float kth[2];
  const int t = blockIdx.x, E = a.E, k = a.k;
  const float* lt = a.logits + static_cast<int64_t>(t) * E;
  if (a.scoring == Scoring::kSoftmax) {
    float mx = -INFINITY;
    for (int e = threadIdx.x; e < E; e += kBlock) mx = fmaxf(mx, lt[e]);
    mx = block_max<kBlock>(mx, scratch);
    float part = 0.0f;
    for (int e = threadIdx.x; e < E; e += kBlock) {
      score[e] = expf(lt[e] - mx);
      part += score[e];
    }
    const float s = block_sum<kBlock>(part, scratch);
    for (int e = threadIdx.x; e < E; e += kBlock) score[e] = score[e] / s;
  } else {
    for (int e = threadIdx.x; e < E; e += kBlock)
      score[e] = a.scoring == Scoring::kSigmoid ? sigmoid_f(lt[e]) : sqrtf(softplus_f(lt[e]));
  }
  if (threadIdx.x == 0) kth[0] = kth[1] = INFINITY;
  __syncthreads();
  if (a.tid2eid) {
    if (threadIdx.x < k) idx[threadIdx.x] = a.tid2eid[static_cast<int64_t>(a.tokens[t]) * k + threadIdx.x];
  } else {
#pragma unroll
    for (int u = 0; u < kBiasPer; ++u) {
      const int e = threadIdx.x + u * kBlock;
      if (e < E) sel[e] = score[e] + bias_pre[u];
    }
    for (int e = threadIdx.x + kBiasPer * kBlock; e < E; e += kBlock) sel[e] = score[e] + a.bias[e];
    __syncthreads();
    if constexpr (kForm == 1) {
      for (int e = threadIdx.x; e < E; e += kBlock) {
        const int rank = rank_among<4>(sel, 0, E, E % 4 == 0, sel[e], e);  // sel = sm + E floats
        if (rank < k) idx[rank] = e;
        if (rank == k - 1) kth[0] = sel[e];
        if (rank == k) kth[1] = sel[e];
      }
    } else {
      __shared__ float cand_v[kMaxSlots];
      __shared__ int cand_e[kMaxSlots];
      const int per = k + 1, slots = (E + kSegment - 1) / kSegment * per;
      for (int c = threadIdx.x; c < slots; c += kBlock) cand_v[c] = NAN, cand_e[c] = -1;  // NaN: ≻ nothing
      __syncthreads();
      for (int e = threadIdx.x; e < E; e += kBlock) {
        const float v = sel[e];
        const int s0 = e / kSegment * kSegment;
        const int srank = rank_among<8>(sel, s0, min(kSegment, E - s0), E % 4 == 0, v, e);
        if (srank <= k) cand_v[e / kSegment * per + srank] = v, cand_e[e / kSegment * per + srank] = e;
      }
      __syncthreads();
      // kSlotThreads adjacent lanes rank one slot, each over every kSlotThreads-th slot.
      const int part = threadIdx.x % kSlotThreads;
      for (int c0 = 0; c0 < slots; c0 += kBlock / kSlotThreads) {
        const int c = c0 + threadIdx.x / kSlotThreads;
        const float v = c < slots ? cand_v[c] : NAN;
        const int e = c < slots ? cand_e[c] : -1;
        int rank = 0;
        for (int j = part; j < slots; j += kSlotThreads) rank += (cand_v[j] > v) || (cand_v[j] == v && cand_e[j] < e);
        rank += __shfl_xor_sync(kFullMask, rank, 1);
        rank += __shfl_xor_sync(kFullMask, rank, 2);
        if (part == 0 && e >= 0) {
          if (rank < k) idx[rank] = e;
          if (rank == k - 1) kth[0] = v;
          if (rank == k) kth[1] = v;
        }
      }
    }
  }
  __syncthreads();
  if constexpr (kForm == 1) {
    if (threadIdx.x == 0) {
      float wts[kMaxK];
      int ids[kMaxK];
      float wsum = 0.0f;
      for (int i = 0; i < k; ++i) {
        ids[i] = idx[i];
        wts[i] = score[ids[i]];
        wsum += wts[i];
      }
      for (int i = 0; i < k; ++i) wts[i] = wts[i] / (wsum + 1e-20f) * a.route_scale;
      for (int i = 1; i < k; ++i) {  // stable insertion sort by expert id
        const int id = ids[i];
        const float wt = wts[i];
        int j = i - 1;
        while (j >= 0 && ids[j] > id) {
          ids[j + 1] = ids[j];
          wts[j + 1] = wts[j];
          --j;
        }
        ids[j + 1] = id;
        wts[j + 1] = wt;
      }
      for (int i = 0; i < k; ++i) {
        a.eid[static_cast<int64_t>(t) * k + i] = ids[i];
        a.ew[static_cast<int64_t>(t) * k + i] = wts[i];
      }
      if (a.margin) a.margin[t] = a.tid2eid || E <= k ? INFINITY : kth[0] - kth[1];
      if (a.scale) {  // the CPU's selection_scale: largest |score + bias|
        float m = 0.0f;
        if (!a.tid2eid)
          for (int e = 0; e < E; ++e) m = fmaxf(m, fabsf(sel[e]));
        a.scale[t] = m;
      }
    }
  } else if (threadIdx.x < kWarp) {
    // Lane i < k holds selection i: the weights summed in selection order (every lane the same
    // chain, from 0 as form 1's thread), renormalised as there; its place among the ids in ascending
    // order, equal ids (a hash row may repeat one) in selection order: form 1's stable sort.
    const int lane = threadIdx.x;
    const int id = lane < k ? idx[lane] : 0;
    const float w = lane < k ? score[id] : 0.0f;
    float wsum = 0.0f;
    for (int i = 0; i < k; ++i) wsum += __shfl_sync(kFullMask, w, i);
    const float wt = w / (wsum + 1e-20f) * a.route_scale;
    int place = 0;
    for (int i = 0; i < k; ++i) {
      const int other = __shfl_sync(kFullMask, id, i);
      place += other < id || (other == id && i < lane);
    }
    if (lane < k) {
      a.eid[static_cast<int64_t>(t) * k + place] = id;
      a.ew[static_cast<int64_t>(t) * k + place] = wt;
    }
    if (a.margin && lane == 0) a.margin[t] = a.tid2eid || E <= k ? INFINITY : kth[0] - kth[1];
    if (a.scale) {  // the CPU's selection_scale: largest |score + bias| (fmaxf: the same in any order)
      float m = 0.0f;
      if (!a.tid2eid)
        for (int e = lane; e < E; e += kWarp) m = fmaxf(m, fabsf(sel[e]));
      m = warp_max(m);
      if (lane == 0) a.scale[t] = m;
    }
  }
}

// Counting sort of the pairs by expert (stable: pair order within an expert), then groups of
// ≤ kGroupRows pairs (an expert's as even as can be), each 3 ints (expert, first slot in
// pair_order, count) in one of two lists: with `split`, groups of ≤ kSmallRows rows from slot 0
// up (n_groups[0] of them) and larger ones from slot top down (n_groups[1]); without, every group
// from slot 0 up (n_groups[1] = 0). An expert yields at most one small group (its last: a 5-row
// expert's 3 + 2), so the lists never meet below max_groups.
__global__ void __launch_bounds__(1024) moe_group_kernel(const int32_t* eid, int P, int E, int32_t* pair_order,
                                                         int32_t* groups, int32_t* n_groups, int top, bool split) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(int, cnt, 4);  // [E] counts, then [E] offsets
  int* off = cnt + E;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int c = 0;
    for (int p = 0; p < P; ++p) c += eid[p] == e;
    cnt[e] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int o = 0, n_small = 0, n_large = 0;
    for (int e = 0; e < E; ++e) {
      off[e] = o;
      // ceil(cnt / kGroupRows) groups as even as can be (5 rows: 3 + 2, 6: 3 + 3, 7: 4 + 3), so
      // that an expert past kGroupRows rows leaves no small remainder but at 5.
      const int ng = (cnt[e] + kGroupRows - 1) / kGroupRows;
      for (int j = 0, s = 0; j < ng; ++j) {
        const int nr = cnt[e] / ng + (j < cnt[e] % ng);
        const int g = !split || nr <= kSmallRows ? n_small++ : top - n_large++;
        groups[3 * g] = e;
        groups[3 * g + 1] = o + s;
        groups[3 * g + 2] = nr;
        s += nr;
      }
      o += cnt[e];
    }
    n_groups[0] = n_small;
    n_groups[1] = n_large;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int o = off[e];
    for (int p = 0; p < P; ++p)
      if (eid[p] == e) pair_order[o++] = p;
  }
}

// A group's rows through dot_rows with the smallest row count RB ≥ nr of 1, 2 and kGroupRows, so a
// lone pair (every pair of a decode step, most of a small batch's) runs the single-row loop with
// four weight loads in flight per lane instead of the 4-row loop's two: the same FMA sequence per
// row (dot_exact.cuh), so the same bits for any nr.
template <typename Row, int RB>
__device__ __forceinline__ void group_up(const ExpertsArgs& a, int e, int i, const int (&pair)[kGroupRows], int nr) {
  const float* xr[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) xr[r] = a.x + static_cast<int64_t>(pair[r] / a.k) * a.D;
  float g_acc[RB], u_acc[RB];
  if constexpr (RB == 1) {  // both weight rows in one loop: eight loads in flight
    dot_rows_pair<Row>(xr[0], stack_row<Row>(a.w1, a.s1, e, a.I, a.D, i), stack_row<Row>(a.w3, a.s3, e, a.I, a.D, i),
                       a.D, g_acc[0], u_acc[0]);
  } else {
    dot_rows<Row, RB>(xr, nr, stack_row<Row>(a.w1, a.s1, e, a.I, a.D, i), a.D, g_acc);
    dot_rows<Row, RB>(xr, nr, stack_row<Row>(a.w3, a.s3, e, a.I, a.D, i), a.D, u_acc);
  }
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int r = 0; r < RB; ++r)
      if (r < nr) a.h[static_cast<int64_t>(pair[r]) * a.I + i] = swiglu_f(g_acc[r], u_acc[r], a.limit);
  }
}

template <typename Row, int RB>
__device__ __forceinline__ void group_down(const ExpertsArgs& a, int e, int o, const int (&pair)[kGroupRows], int nr) {
  const float* hr[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) hr[r] = a.h + static_cast<int64_t>(pair[r]) * a.I;
  float acc[RB];
  dot_rows<Row, RB>(hr, nr, stack_row<Row>(a.w2, a.s2, e, a.D, a.I, o), a.I, acc);
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int r = 0; r < RB; ++r)
      if (r < nr) a.eo[static_cast<int64_t>(pair[r]) * a.D + o] = acc[r];
  }
}

// The wide form: w1's and w3's rows of a warp's intermediate index share each activation load
// (dot_rows_multi), and a down warp takes kDownPerWarp consecutive w2 rows. The 8-row loop read a
// group's activations once per weight row: L1/TEX 75.6% busy at batch 64 (ncu, run 63); the large
// list's groups (3-8 rows) took 21% less time in this form, the small list's two-row groups a
// further 5% (runs 66, 69). Two indices per up warp (4 weight rows) took 196 registers, and 2
// blocks per SM then spilled 100 bytes. Down rows past D are clamped and not written.
constexpr int kDownPerWarp = 2;

template <typename Row, int RB>
__device__ __forceinline__ void group_up_wide(const ExpertsArgs& a, int e, int i, const int (&pair)[kGroupRows], int nr) {
  const float* xr[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) xr[r] = a.x + static_cast<int64_t>(pair[r] / a.k) * a.D;
  const Row w[2] = {stack_row<Row>(a.w1, a.s1, e, a.I, a.D, i), stack_row<Row>(a.w3, a.s3, e, a.I, a.D, i)};
  float acc[2][RB];
  dot_rows_multi<Row, RB, 2>(xr, nr, w, a.D, acc);
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int r = 0; r < RB; ++r)
      if (r < nr) a.h[static_cast<int64_t>(pair[r]) * a.I + i] = swiglu_f(acc[0][r], acc[1][r], a.limit);
  }
}

template <typename Row, int RB>
__device__ __forceinline__ void group_down_wide(const ExpertsArgs& a, int e, int o0, const int (&pair)[kGroupRows], int nr) {
  const float* hr[RB];
#pragma unroll
  for (int r = 0; r < RB; ++r) hr[r] = a.h + static_cast<int64_t>(pair[r]) * a.I;
  Row w[kDownPerWarp];
#pragma unroll
  for (int t = 0; t < kDownPerWarp; ++t) w[t] = stack_row<Row>(a.w2, a.s2, e, a.D, a.I, min(o0 + t, a.D - 1));
  float acc[kDownPerWarp][RB];
  dot_rows_multi<Row, RB, kDownPerWarp>(hr, nr, w, a.I, acc);
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int t = 0; t < kDownPerWarp; ++t)
#pragma unroll
      for (int r = 0; r < RB; ++r)
        if (r < nr && o0 + t < a.D) a.eo[static_cast<int64_t>(pair[r]) * a.D + o0 + t] = acc[t][r];
  }
}

// One of moe_group_kernel's lists: group j sits at slot first + step·j; n_groups[which] of them.
struct GroupList {
  int first, step, which;
};

// Group j of the list: its expert, and its pairs (padded with the first).
__device__ __forceinline__ void group_at(const ExpertsArgs& a, GroupList list, int j, int& e, int (&pair)[kGroupRows],
                                         int& nr) {
  const int g = list.first + list.step * j;
  e = a.groups[3 * g];
  const int start = a.groups[3 * g + 1];
  nr = a.groups[3 * g + 2];
#pragma unroll
  for (int r = 0; r < kGroupRows; ++r) pair[r] = a.pair_order[start + (r < nr ? r : 0)];
}

// The two stages of the grouped launches, as moe_stage_kernel takes them: the outputs a warp
// walks (I intermediate indices, D hidden features), the narrow form with RB rows (dot_rows, one
// output per warp) and the wide form (kWidePerWarp outputs per warp). kLoneNarrow: a lone row keeps
// the narrow form in the small list's wide kernel (group_up<1>'s loop already reads w1 and w3
// together).
struct UpStage {
  static constexpr int kWidePerWarp = 1;
  static constexpr bool kLoneNarrow = true;
  __host__ __device__ static int outputs(const ExpertsArgs& a) { return a.I; }
  template <typename Row, int RB>
  __device__ __forceinline__ static void narrow(const ExpertsArgs& a, int e, int o, const int (&pair)[kGroupRows], int nr) {
    group_up<Row, RB>(a, e, o, pair, nr);
  }
  template <typename Row, int RB>
  __device__ __forceinline__ static void wide(const ExpertsArgs& a, int e, int o, const int (&pair)[kGroupRows], int nr) {
    group_up_wide<Row, RB>(a, e, o, pair, nr);
  }
};

struct DownStage {
  static constexpr int kWidePerWarp = kDownPerWarp;
  static constexpr bool kLoneNarrow = false;
  __host__ __device__ static int outputs(const ExpertsArgs& a) { return a.D; }
  template <typename Row, int RB>
  __device__ __forceinline__ static void narrow(const ExpertsArgs& a, int e, int o, const int (&pair)[kGroupRows], int nr) {
    group_down<Row, RB>(a, e, o, pair, nr);
  }
  template <typename Row, int RB>
  __device__ __forceinline__ static void wide(const ExpertsArgs& a, int e, int o, const int (&pair)[kGroupRows], int nr) {
    group_down_wide<Row, RB>(a, e, o, pair, nr);
  }
};

// One stage (UpStage, DownStage) for the groups of one list. kMaxRows bounds the list's group size,
// so the small list's kernel (kSmallRows) is compiled without the 4-row loops: the register
// count of a kernel is that of its largest path, and the 8-row loop's 120 registers held every
// group of a 64-row round at two blocks per SM (ncu, run 63). kWide: the wide form. Only the small
// list's blocks stride over several groups along x (its bound, one group per expert, is loose); the
// larger kernels take one group per block row, as a stride loop cost them registers and spills (64
// bytes in the 8-row up kernel, 4% at batch 8, run 65).
template <int kMaxRows>
inline constexpr bool kStrided = kMaxRows <= kSmallRows;

// Groups hold at most 4 rows (kGroupRows): compiled for 8, the large list's kernels held 128
// registers and spilled in every group (ncu, run 195: 1.8 M local requests to L2, 62-65% of DRAM
// peak), where at 4 they spill nothing at the same 128 and two blocks an SM (batch 64's experts
// −2.8%, run 196). Three blocks an SM would spill 80-304 bytes. Passes of 2 or 4 rows inside an
// 8-row group lost instead (run 180): their re-reads of the block's weight rows came from DRAM.
template <typename Row, typename Stage, int kMaxRows, bool kWide>
__global__ void __launch_bounds__(kBlock, kWide && kMaxRows > kSmallRows ? 2 : 0)
    moe_stage_kernel(ExpertsArgs a, GroupList list) {
  pdl_begin();
  const int o = (blockIdx.y * kWarps + threadIdx.x / kWarp) * (kWide ? Stage::kWidePerWarp : 1);
  if (o >= Stage::outputs(a)) return;
  const int n = a.n_groups[list.which];
  const auto one = [&](int j) {
    int e, nr, pair[kGroupRows];
    group_at(a, list, j, e, pair, nr);
    if constexpr (kWide && kMaxRows <= kSmallRows) {
      if (nr == 1) {
        if constexpr (Stage::kLoneNarrow) Stage::template narrow<Row, 1>(a, e, o, pair, nr);
        else Stage::template wide<Row, 1>(a, e, o, pair, nr);
      } else {
        Stage::template wide<Row, 2>(a, e, o, pair, nr);
      }
    } else if constexpr (kWide) {
      Stage::template wide<Row, kGroupRows>(a, e, o, pair, nr);
    } else {
      if (nr == 1) Stage::template narrow<Row, 1>(a, e, o, pair, nr);
      else if (kMaxRows <= 2 || nr == 2) Stage::template narrow<Row, 2>(a, e, o, pair, nr);
      else Stage::template narrow<Row, kGroupRows>(a, e, o, pair, nr);
    }
  };
  if constexpr (kStrided<kMaxRows>) {
    for (int j = blockIdx.x; j < n; j += gridDim.x) one(j);
  } else if (blockIdx.x < n) {
    one(blockIdx.x);
  }
}

// One row (a batch-1 decode step) in one launch. With one row every pair is a group of its own, so
// the grouping launch is not needed, and up and down run in one persistent grid: item it (blocks
// take it = blockIdx.x, + gridDim.x, …) is an up tile (pair p, kWarps rows of w1/w3) for it < k·up_tiles,
// else a down tile (pair p, kDownOuts rows of w2); a down tile starts once all up tiles of its pair
// have counted themselves done in sync[p]. The three launches cost a decode step ~15 us beyond the
// weight stream (the group kernel, the up → down boundary, down's 3072 short blocks at 2.9 TB/s:
// ncu, run 34). A down tile copies its pair's h (written by other blocks: through L2) into shared
// memory once and its warps take two w2 rows each from there: run 46's version read h per warp
// through L2 (8 KB per output, 200 MB per step for V4-Flash) and ran 25% slower than the grouped
// launches. Each element is group_up/group_down's dot for one row (dot_rows_pair: two dot_rows<Row, 1>
// sequences), so the bits are the grouped launches'.
// No deadlock: a block takes its items in ascending order and every up item precedes every down
// item, so a waiting block waits only on up items that blocks not waiting are running; the grid is
// at most the kernel's resident capacity, so every block gets an SM once other kernels drain.
// sync [k + 1]: [0, k) up tiles done per pair, [k] blocks finished; the last block to finish zeroes it
// for the next launch (zeroed at allocation). Dynamic shared memory: I floats.
constexpr int kDownOuts = 2 * kWarps;  // w2 rows per down tile: two per warp

template <typename Row>
__global__ void __launch_bounds__(kBlock) moe_one_row_kernel(ExpertsArgs a, int up_tiles, int down_tiles) {
  pdl_begin();
  MEMRA_DYNAMIC_SMEM(float, h_s, 16);  // [I]: the down tile's pair's h
  const int k = a.k, warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int n_up = k * up_tiles, n_items = n_up + k * down_tiles;
  int32_t* sync = a.sync;
  for (int it = blockIdx.x; it < n_items; it += gridDim.x) {
    if (it < n_up) {
      const int p = it / up_tiles, i = (it % up_tiles) * kWarps + warp;
      if (i < a.I) {
        const int e = a.eid[p];
        float g, u;
        dot_rows_pair<Row>(a.x, stack_row<Row>(a.w1, a.s1, e, a.I, a.D, i), stack_row<Row>(a.w3, a.s3, e, a.I, a.D, i),
                           a.D, g, u);
        if (lane == 0) {
          a.h[static_cast<int64_t>(p) * a.I + i] = swiglu_f(g, u, a.limit);
          __threadfence();  // the value reaches L2 before the count below says so
        }
      }
      __syncthreads();
      if (threadIdx.x == 0) atomicAdd(&sync[p], 1);
    } else {
      const int q = it - n_up, p = q / down_tiles, o = (q % down_tiles) * kDownOuts + 2 * warp;
      if (threadIdx.x == 0) {
        const long long start = clock64();
        while (*reinterpret_cast<volatile int32_t*>(&sync[p]) < up_tiles) {
          __nanosleep(64);
          if (clock64() - start > (1ll << 33)) __trap();  // seconds: a broken invariant, not a hang
        }
        __threadfence();
      }
      __syncthreads();
      const float* hg = a.h + static_cast<int64_t>(p) * a.I;
#pragma unroll 4
      for (int i = threadIdx.x; i < a.I; i += kBlock) h_s[i] = __ldcg(hg + i);  // L2: other blocks wrote it
      __syncthreads();
      const int e = a.eid[p];
      float* eo = a.eo + static_cast<int64_t>(p) * a.D;
      if (o + 1 < a.D) {
        float acc0, acc1;
        dot_rows_pair<Row>(h_s, stack_row<Row>(a.w2, a.s2, e, a.D, a.I, o), stack_row<Row>(a.w2, a.s2, e, a.D, a.I, o + 1),
                           a.I, acc0, acc1);
        if (lane == 0) eo[o] = acc0, eo[o + 1] = acc1;
      } else if (o < a.D) {
        const float* hr[1] = {h_s};
        float acc[1];
        dot_rows<Row, 1>(hr, 1, stack_row<Row>(a.w2, a.s2, e, a.D, a.I, o), a.I, acc);
        if (lane == 0) eo[o] = acc[0];
      }
      __syncthreads();  // h_s is rewritten by this block's next down tile
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&sync[k], 1) == static_cast<int>(gridDim.x) - 1) {
      for (int p = 0; p <= k; ++p) sync[p] = 0;
      __threadfence();
    }
  }
}

__global__ void swiglu_kernel(const float* g, const float* u, float* h, int64_t n, float limit) {
  pdl_begin();
  for (int64_t i = global_thread(); i < n; i += global_stride()) h[i] = swiglu_f(g[i], u[i], limit);
}

__global__ void combine_kernel(const float* eo, const float* ew, const float* shared, int rows, int k, int D, float* out) {
  pdl_begin();
  const int64_t total = static_cast<int64_t>(rows) * D;
  for (int64_t id = global_thread(); id < total; id += global_stride()) {
    const int64_t t = id / D;
    out[id] = moe_routed(eo, ew, k, D, t, static_cast<int>(id % D)) + shared[id];
  }
}

int grid_for(int64_t total) {
  const int64_t b = (total + kBlock - 1) / kBlock;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// MEMRA_CUDA_MOE_ONE_ROW=0 keeps one-row rounds on the grouped launches (an A/B switch; same bits).
bool one_row_enabled() {
  static const bool on = switch_on("MEMRA_CUDA_MOE_ONE_ROW");
  return on;
}

// A one-row round takes the one-row kernel when its counters are given and its h tile fits the
// default shared memory (V4-Flash: I = 2048, 8 KB).
bool one_row(const ExpertsArgs& a) {
  return a.rows == 1 && a.sync && one_row_enabled() && static_cast<size_t>(a.I) * sizeof(float) <= 48 * 1024;
}

template <typename Row>
cudaError_t launch_one_row(const ExpertsArgs& a, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(a.I) * sizeof(float);
  DeviceCaps caps;
  int per_sm = 0;
  cudaError_t err;
  if ((err = current_device_caps(caps)) != cudaSuccess ||
      (err = resident_blocks(reinterpret_cast<const void*>(moe_one_row_kernel<Row>), kBlock, smem, per_sm)) != cudaSuccess)
    return err;
  const int sms = caps.sms;
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  const int up_tiles = (a.I + kWarps - 1) / kWarps, down_tiles = (a.D + kDownOuts - 1) / kDownOuts;
  const int64_t items = static_cast<int64_t>(a.k) * (up_tiles + down_tiles);
  const int grid = static_cast<int>(std::min<int64_t>(items, static_cast<int64_t>(per_sm) * sms));
  return launch(moe_one_row_kernel<Row>, grid, kBlock, smem, stream, a, up_tiles, down_tiles);
}

// Two group lists (ExpertsArgs::lists = 2), else one. Left to the library (lists = 0):
// MEMRA_CUDA_MOE_SPLIT=0 or 1 (A/B timing; same bits), unset = from kSplitRows rows. Its two
// extra launches cost less than they give even at batch 8 (experts 604 → 588 us a layer) and
// verify 6 (474 → 460): run 67, A/B against 16 rows.
constexpr int kSplitRows = 2;

bool split_lists(const ExpertsArgs& a) {
  static const int setting = switch_choice("MEMRA_CUDA_MOE_SPLIT", {0, 1}, -1);
  if (a.lists == 1 || a.lists == 2) return a.lists == 2;
  return setting < 0 ? a.rows >= kSplitRows : setting == 1;
}

// MEMRA_CUDA_MOE_WIDE (A/B; same bits): 0 = both lists through the one-output-per-warp kernels,
// 1 = the large list wide, unset = both lists wide.
int wide_setting() {
  static const int level = switch_choice("MEMRA_CUDA_MOE_WIDE", {0, 1}, 2);
  return level;
}

// One list's launch: grid x one block row per possible group of the list (`bound`), or for the
// strided small list at most kGroupBlocks; grid y the stage's outputs at the kernel's outputs per
// warp. Both follow from the kernel's own template arguments, so the host cannot disagree with it.
template <typename Row, typename Stage, int kMaxRows, bool kWide>
cudaError_t launch_list(const ExpertsArgs& a, GroupList list, int bound, cudaStream_t stream) {
  constexpr int per_warp = kWide ? Stage::kWidePerWarp : 1;
  const int x = std::max(1, kStrided<kMaxRows> ? std::min(bound, kGroupBlocks) : bound);
  const int y = (Stage::outputs(a) + kWarps * per_warp - 1) / (kWarps * per_warp);
  return launch(moe_stage_kernel<Row, Stage, kMaxRows, kWide>, dim3(x, y), kBlock, 0, stream, a, list);
}

// One stage's launches: one list, or the small and the large list.
template <typename Row, typename Stage>
cudaError_t launch_stage(const ExpertsArgs& a, int max_groups, bool split, int wide, cudaStream_t stream) {
  if (!split) return launch_list<Row, Stage, kGroupRows, false>(a, GroupList{0, 1, 0}, max_groups, stream);
  const int P = a.rows * a.k, small_bound = std::min(a.E, P), large_bound = P / (kSmallRows + 1);
  const GroupList small{0, 1, 0}, large{max_groups - 1, -1, 1};
  const cudaError_t err = wide >= 2 ? launch_list<Row, Stage, kSmallRows, true>(a, small, small_bound, stream)
                                    : launch_list<Row, Stage, kSmallRows, false>(a, small, small_bound, stream);
  if (err != cudaSuccess || large_bound == 0) return err;
  return wide >= 1 ? launch_list<Row, Stage, kGroupRows, true>(a, large, large_bound, stream)
                   : launch_list<Row, Stage, kGroupRows, false>(a, large, large_bound, stream);
}

// Each list's down reads only its own rows of h, but the large list on a stream of its own beside
// the small list's gained nothing (run 183, ±0.5%): its two blocks an SM (256 threads × 128
// registers) take all of an SM's 64 K registers, so an SM runs one list or the other.
template <typename Row>
cudaError_t launch_experts(const ExpertsArgs& a, int max_groups, cudaStream_t stream) {
  if (one_row(a)) return launch_one_row<Row>(a, stream);
  const bool split = split_lists(a);
  const int wide = wide_setting();
  const cudaError_t err = launch_stage<Row, UpStage>(a, max_groups, split, wide, stream);
  return err != cudaSuccess ? err : launch_stage<Row, DownStage>(a, max_groups, split, wide, stream);
}

// MEMRA_CUDA_ROUTE_FORM=1 (A/B timing; the same bits): form 1 where the caller leaves the form open.
int route_form_setting() {
  static const int form = switch_count("MEMRA_CUDA_ROUTE_FORM", 0) == 1 ? 1 : 0;
  return form;
}

}  // namespace

cudaError_t route(const RouteArgs& a, cudaStream_t stream, int form) {
  if (a.rows == 0) return cudaSuccess;
  if (!a.logits || !a.eid || !a.ew || a.rows < 0 || a.E < 1 || a.k < 1 || a.k > kMaxK || a.k > a.E ||
      (!a.tid2eid && !a.bias) || (a.tid2eid && !a.tokens))
    return cudaErrorInvalidValue;
  const size_t smem = sizeof(float) * 2 * static_cast<size_t>(a.E);
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  if (form < 0) form = route_form_setting();
  if (a.E > kMaxSlots / (kMaxK + 1) * kSegment) form = 1;  // form 0's candidate slots hold E ≤ 1024
  return form == 1 ? launch(route_kernel<1>, a.rows, kBlock, smem, stream, a)
                   : launch(route_kernel<0>, a.rows, kBlock, smem, stream, a);
}

int experts_max_groups(int rows, int k, int E) {
  const int P = rows * k;
  const int bound = P / kGroupRows + (E < P ? E : P);
  return P < bound ? P : bound;
}

cudaError_t experts_fused(const ExpertsArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (!a.x || !a.eid || !a.w1 || !a.w2 || !a.w3 || !a.pair_order || !a.groups || !a.n_groups || !a.h || !a.eo ||
      a.rows < 0 || a.D <= 0 || a.I <= 0 || a.E < 1 || a.k < 1 || !wscale_valid(a.wtype, a.s1, a.D) ||
      !wscale_valid(a.wtype, a.s3, a.D) || !wscale_valid(a.wtype, a.s2, a.I))
    return cudaErrorInvalidValue;
  const int P = a.rows * a.k, max_groups = experts_max_groups(a.rows, a.k, a.E);
  const size_t smem = sizeof(int) * 2 * static_cast<size_t>(a.E);
  if (smem > 48 * 1024 || max_groups > 0x7fffffff || (a.I + kWarps - 1) / kWarps > 65535 ||
      (a.D + kWarps - 1) / kWarps > 65535)
    return cudaErrorInvalidValue;
  if (!one_row(a)) {  // the one-row kernel needs no groups
    const cudaError_t err = launch(moe_group_kernel, 1, 1024, smem, stream, a.eid, P, a.E, a.pair_order, a.groups,
                                   a.n_groups, max_groups - 1, split_lists(a));
    if (err != cudaSuccess) return err;
  }
  switch (a.wtype) {
    case WType::kF32: return launch_experts<PlainRow<float>>(a, max_groups, stream);
    case WType::kBF16: return launch_experts<PlainRow<__nv_bfloat16>>(a, max_groups, stream);
    case WType::kF16: return launch_experts<PlainRow<__half>>(a, max_groups, stream);
    case WType::kFp8Block: return launch_experts<Fp8Row>(a, max_groups, stream);
    case WType::kFp4Block: return launch_experts<Fp4Row>(a, max_groups, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t swiglu(const float* g, const float* u, float* h, int64_t n, float limit, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!g || !u || !h || n < 0) return cudaErrorInvalidValue;
  return launch(swiglu_kernel, grid_for(n), kBlock, 0, stream, g, u, h, n, limit);
}

cudaError_t moe_combine(const float* eo, const float* ew, const float* shared, int rows, int k, int D, float* out,
                        cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!eo || !ew || !shared || !out || rows < 0 || k < 1 || D <= 0) return cudaErrorInvalidValue;
  return launch(combine_kernel, grid_for(static_cast<int64_t>(rows) * D), kBlock, 0, stream, eo, ew, shared, rows, k, D, out);
}

}  // namespace memra::cuda
