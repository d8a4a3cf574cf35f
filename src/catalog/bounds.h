/* src/catalog/bounds.h — the physical range of every rate, size and time a catalog, cluster or
 * islands file may state, checked when the file is read so that a value no hardware has (1e-300
 * B/s, a 1e30 FLOP/s GPU) is refused there, naming the field, instead of failing later in a
 * message that names none ("no ring joins all islands", a search counting every plan failed).
 * Internal to src/ (catalog.c, topo/cluster_json.c, islands/islands_json.c).
 *
 * Each range is several orders of magnitude wider than the hardware of 2024-2026 on both sides,
 * so no real device is refused; what it catches is a unit slip (GB/s written as B/s, ms as s) or
 * garbage. The numbers the catalog ships (data/ JSON files) sit well inside every range.
 */
#ifndef MESHPLAN_CATALOG_BOUNDS_H
#define MESHPLAN_CATALOG_BOUNDS_H

/* Bandwidth, bytes/s per direction: 1 MB/s (below 10 Mb/s Ethernet, the slowest network
 * anything trains over) to 1 PB/s (over 1,000x NVLink 5's 900 GB/s per GPU and 100x B300's
 * 8 TB/s HBM). Links, NIC ports, WAN links, island uplinks and HBM bandwidth. */
#define MP_BOUND_BW_MIN_BPS 1e6
#define MP_BOUND_BW_MAX_BPS 1e15
#define MP_BOUND_BW_TEXT "bytes/s in [1e6, 1e15] (1 MB/s to 1 PB/s)"

/* One-hop latency, seconds: 0 to 1 s (an intercontinental round trip is about 0.3 s; the
 * catalog's slowest link, wan-10, states 30 ms). */
#define MP_BOUND_LATENCY_MAX_S 1.0
#define MP_BOUND_LATENCY_TEXT "seconds in [0, 1]"

/* Peak and measured FLOP/s per GPU and dtype: 1 GFLOP/s (one CPU core) to 1 EFLOP/s (200x a
 * B300's 5 PFLOP/s dense FP8). */
#define MP_BOUND_FLOPS_MIN 1e9
#define MP_BOUND_FLOPS_MAX 1e18
#define MP_BOUND_FLOPS_TEXT "FLOP/s in [1e9, 1e18] (1 GFLOP/s to 1 EFLOP/s)"

/* GPU memory, bytes: 100 MB (smaller than any accelerator that trains) to 10 TB (35x a B300's
 * 288 GB). */
#define MP_BOUND_MEM_MIN_B 1e8
#define MP_BOUND_MEM_MAX_B 1e13
#define MP_BOUND_MEM_TEXT "bytes in [1e8, 1e13] (100 MB to 10 TB)"

/* Power, watts: a GPU board 1 W to 100 kW (70x a B300's 1,400 W); a node's or cluster's
 * overhead beyond its GPUs 0 to 10 MW. */
#define MP_BOUND_GPU_POWER_MIN_W 1.0
#define MP_BOUND_GPU_POWER_MAX_W 1e5
#define MP_BOUND_GPU_POWER_TEXT "watts in [1, 1e5]"
#define MP_BOUND_OVERHEAD_POWER_MAX_W 1e7
#define MP_BOUND_OVERHEAD_POWER_TEXT "watts in [0, 1e7]"

#endif
