/* src/cli/cli_hwloc.c — the host topology `meshplan probe` reports for each node, from hwloc
 * (Debian libhwloc-dev; found by CMake's pkg-config, MESHPLAN_HAVE_HWLOC): packages, NUMA nodes,
 * cores, hardware threads, and the GPUs and NICs hwloc sees on PCI. Without hwloc the summary
 * says so and the probe measures as before. */
#include <stdio.h>
#include <string.h>

#include "cli_probe.h"

#ifdef MESHPLAN_HAVE_HWLOC
#include <hwloc.h>

/* Append the names of the OS devices of one kind (GPU/coprocessor, network/OpenFabrics). */
static int list_osdev(hwloc_topology_t t, int want_gpu, char *buf, int cap)
{
    int n = 0, len = (int)strlen(buf);
    for (hwloc_obj_t o = hwloc_get_next_osdev(t, NULL); o; o = hwloc_get_next_osdev(t, o)) {
        hwloc_obj_osdev_type_t k = o->attr->osdev.type;
        int is_gpu = k == HWLOC_OBJ_OSDEV_GPU || k == HWLOC_OBJ_OSDEV_COPROC;
        int is_nic = k == HWLOC_OBJ_OSDEV_NETWORK || k == HWLOC_OBJ_OSDEV_OPENFABRICS;
        if (want_gpu ? !is_gpu : !is_nic)
            continue;
        if (len < cap - 1)
            len += snprintf(buf + len, (size_t)(cap - len), "%s%s", n ? " " : "",
                            o->name ? o->name : "?");
        n++;
    }
    if (!n && len < cap - 1)
        snprintf(buf + len, (size_t)(cap - len), "none");
    return n;
}

void cli_hwloc_summary(char *buf, int cap)
{
    hwloc_topology_t t;
    buf[0] = 0;
    if (hwloc_topology_init(&t) != 0) {
        snprintf(buf, (size_t)cap, "hwloc: topology init failed");
        return;
    }
    /* PCI and OS devices (GPUs, NICs) are filtered out by default; keep the important ones. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
        snprintf(buf, (size_t)cap, "hwloc: topology load failed");
        hwloc_topology_destroy(t);
        return;
    }
    int len = snprintf(buf, (size_t)cap, "%d package(s), %d NUMA node(s), %d core(s), %d PU(s); GPUs: ",
                       hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE),
                       hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE),
                       hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE),
                       hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
    if (len < 0 || len >= cap) {
        hwloc_topology_destroy(t);
        return;
    }
    list_osdev(t, 1, buf, cap);
    len = (int)strlen(buf);
    if (len < cap - 1)
        snprintf(buf + len, (size_t)(cap - len), "; NICs: ");
    list_osdev(t, 0, buf, cap);
    hwloc_topology_destroy(t);
}
#else
void cli_hwloc_summary(char *buf, int cap)
{
    snprintf(buf, (size_t)cap, "host topology not read (built without hwloc: libhwloc-dev)");
}
#endif
