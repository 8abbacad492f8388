/*
 * Live changes to probe sites while other threads run through them.
 *
 * Bytes are written through /proc/self/mem: the kernel writes the page
 * with FOLL_FORCE (breaking copy-on-write for the private text mapping)
 * while our own mapping stays r-x the whole time. mprotect() would make
 * the code writable (or not executable, crashing threads running there)
 * for a moment, and a second writable mapping of the same pages cannot be
 * had for a private file mapping without remapping it.
 *
 * Every change follows the kernel's int3-first protocol (text_poke_bp):
 * int3 on byte 0, serialize every core, write the tail, serialize, write
 * byte 0, serialize. Serializing is membarrier(SYNC_CORE): every thread
 * of the process that is running on a core executes a core-serializing
 * instruction before it returns. A thread that meets the int3 meanwhile
 * is sent to the out-of-line copy by the SIGTRAP handler.
 *
 * The jump may only be written back when no thread can be between the
 * DCR's instructions (it would resume in the middle of the jmp). Threads
 * get there only while the original bytes are in place (a disabled
 * probe): the int3 state resumes at a copy of the whole DCR, and a call
 * may only end a DCR (its return address is after it). So a point whose
 * original bytes were out is "exposed" and is re-optimized only after a
 * checkpoint (trap.c) finds no thread inside; otherwise it stays int3 and
 * the command fails with EBUSY.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "arch/x86/site.h"

static int mem_fd = -1;
static bool sync_registered;

static int mem_write(uintptr_t addr, const void *bytes, size_t n)
{
    if (mem_fd < 0 && (mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC)) < 0)
        return -errno;
    ssize_t w = pwrite(mem_fd, bytes, n, (off_t)addr);
    if (w == (ssize_t)n)
        return 0;
    return w < 0 ? -errno : -EIO;
}

static int sync_cores(void)
{
    if (!sync_registered) {
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) < 0)
            return -errno;
        sync_registered = true;
    }
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) < 0 ? -errno : 0;
}

/* The child of a fork: mem_fd is the parent's /proc/PID/mem (the file
 * names the process that opened it), so the child's writes would change
 * the parent's code and leave its own as it was. The child opens its own
 * at its first write. The membarrier registration is the parent's mm's;
 * the child registers again (it is idempotent where fork keeps it). */
void patch_fork_child(void)
{
    if (mem_fd >= 0)
        close(mem_fd);
    mem_fd = -1;
    sync_registered = false;
}

/* write then serialize */
static int poke(uintptr_t addr, const void *bytes, size_t n)
{
    int rc = mem_write(addr, bytes, n);
    return rc < 0 ? rc : sync_cores();
}

enum code_state patch_wanted(const struct point *pt)
{
    /* a post_handler or a jprobe needs the int3 path (single step, the
     * jprobe's diversion); kprobes all disabled disarm it (api.c) */
    bool off = !pt->guard && (pt->disabled || pt->api_off);   /* the signal guard stays (libc-guard.c) */
    return kprw_wanted(pt->guard || rt_knob(RT_KNOB_ENABLED), rt_knob(RT_KNOB_OPTIMIZATION), off, pt->unoptimized,
                       pt->verdict == KPRW_OPTIMIZED && pt->detour && !pt->nint3);
}

static const uint8_t int3 = X86_INT3;

/* Towards int3 or the original bytes (always safe). */
static int step_down(struct point *pt, enum code_state want)
{
    int rc;
    if (pt->code == CODE_OPTIMIZED) {
        if ((rc = poke(pt->addr, &int3, 1)) < 0 ||
            (pt->site_len > 1 && (rc = poke(pt->addr + 1, pt->orig + 1, pt->site_len - 1u)) < 0))
            return rc;
        pt->code = CODE_INT3;
    }
    if (want == CODE_DISABLED && pt->code == CODE_INT3) {
        pt->exposed = true;
        pt->code = CODE_DISABLED;   /* first: from now on nothing counts */
        if ((rc = poke(pt->addr, pt->orig, 1)) < 0) {
            pt->code = CODE_INT3;
            return rc;
        }
        /* a thread that met the int3 just before may still be counting:
         * let it finish, so no hit shows up after this returns */
        for (int i = 0; i < 1000 && rt_traps_running(); i++)
            sched_yield();
    }
    if (want == CODE_INT3 && pt->code == CODE_DISABLED) {
        if ((rc = poke(pt->addr, &int3, 1)) < 0)
            return rc;
        pt->code = CODE_INT3;
    }
    return 0;
}

/* dispatch.S and kretprobe-fast.S: between reading a point's state and
 * counting its hit */
extern const char rt_count_window[], rt_count_window_end[];
extern const char rt_kret_count_window[], rt_kret_count_window_end[];
extern const char rt_enter_count_window[], rt_enter_count_window_end[];

static bool inside_count_window(uintptr_t ip)
{
    return (ip >= (uintptr_t)rt_count_window && ip < (uintptr_t)rt_count_window_end) ||
           (ip >= (uintptr_t)rt_kret_count_window && ip < (uintptr_t)rt_kret_count_window_end) ||
           (ip >= (uintptr_t)rt_enter_count_window && ip < (uintptr_t)rt_enter_count_window_end);
}

static struct point **pending;
static size_t npending;

static bool inside_pending(uintptr_t ip)
{
    for (size_t i = 0; i < npending; i++)
        if (ip > pending[i]->addr && ip < pending[i]->addr + pending[i]->site_len)
            return true;
    return false;
}

/* int3 -> jmp: the tail first (nobody runs it: byte 0 traps), then byte 0.
 * A site shorter than a jmp rel32 (KPRW_F_JUMP8) gets its jmp rel8 to the
 * trampoline back, which jumps to the detour. */
static int arm_jump(struct point *pt)
{
    uint8_t b[KPRW_ORIG_MAX];
    /* (the table was checked: the site is long enough, the detour and the
     * trampoline in reach) */
    if ((pt->flags & KPRW_F_JUMP8) ? !x86_site_jump8(b, pt->addr, pt->addr + X86_JMP8_LEN + (uintptr_t)(intptr_t)(int8_t)pt->jump8,
                                                     pt->site_len)
                                   : !x86_site_jump(b, pt->addr, pt->detour, pt->site_len))
        return -EINVAL;
    int rc = poke(pt->addr + 1, b + 1, pt->site_len - 1u);
    if (rc < 0 || (rc = poke(pt->addr, b, 1)) < 0)
        return rc;
    pt->code = CODE_OPTIMIZED;
    return 0;
}

/* A short site: a jmp rel8 to a trampoline that jumps to the detour. The
 * trampoline is read through process_vm_readv, which fails instead of
 * faulting should an edited site point off the mapping. Keeps the rel8
 * for arm_jump. */
static bool short_jump_verified(struct point *pt, const uint8_t *s)
{
    uint64_t tramp;
    if (!x86_site_jump8_target(s, pt->addr, &tramp))
        return false;
    uint8_t t[X86_JMP32_LEN];
    struct iovec mine = { t, sizeof t }, there = { (void *)(uintptr_t)tramp, sizeof t };
    if (process_vm_readv(getpid(), &mine, 1, &there, 1, 0) != (ssize_t)sizeof t ||
        !x86_site_jumps_to(t, tramp, pt->detour))
        return false;
    pt->jump8 = s[1];
    return true;
}

/* Before the first write to a site: does it hold what the table says it
 * does (the jmp to its detour, the int3, or the original bytes)? Checked
 * here rather than when the table is registered, so that start-up touches
 * no page of code; the table's offsets themselves were checked then. */
static bool site_verified(struct point *pt)
{
    if (pt->verified)
        return true;
    const uint8_t *s = (const uint8_t *)pt->addr;
    bool ok;
    switch (pt->code) {
    case CODE_OPTIMIZED:
        ok = (pt->flags & KPRW_F_JUMP8) ? short_jump_verified(pt, s) : x86_site_jumps_to(s, pt->addr, pt->detour);
        break;
    case CODE_INT3:
        ok = s[0] == X86_INT3 && memcmp(s + 1, pt->orig + 1, pt->site_len - 1u) == 0;
        break;
    default:
        ok = memcmp(s, pt->orig, pt->site_len) == 0;
    }
    if (!ok)
        fprintf(stderr, "kprewrite-rt: %s+0x%x: the site does not hold what the probe table says; "
                "not patching it\n", pt->name, pt->offset);
    return pt->verified = ok;
}

/* Bring each point's code to what it wants. Under rt_lock. Returns 0 or
 * the first error; points that failed keep a safe state (int3 at worst). */
int patch_list(struct point *const *v, size_t n)
{
    int first = 0, rc;
    struct point **want_jump = malloc((n ? n : 1) * sizeof *want_jump);
    struct point **exposed = malloc((n ? n : 1) * sizeof *exposed);
    size_t njump = 0;
    bool detour_disabled = false;
    if (!want_jump || !exposed) {
        free(want_jump);
        free(exposed);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        enum code_state want = patch_wanted(v[i]);
        if (want == (enum code_state)v[i]->code)
            continue;
        if (!site_verified(v[i])) {
            first = first ? first : -EILSEQ;
            continue;
        }
        rc = step_down(v[i], want == CODE_OPTIMIZED ? CODE_INT3 : want);
        if (rc < 0) {
            first = first ? first : rc;
            continue;
        }
        if (want == CODE_OPTIMIZED)
            want_jump[njump++] = v[i];
        if (want == CODE_DISABLED && v[i]->detour)
            detour_disabled = true;
    }
    /* Nothing counts once disable has returned: a thread that read the
     * point's state in the detour's dispatcher just before it changed (and
     * was preempted there) must have counted first. Best effort: a program
     * that took our signal cannot be asked, and then a hit may land late. */
    if (detour_disabled)
        trap_checkpoint(inside_count_window);
    /* one checkpoint for every exposed point */
    npending = 0;
    pending = exposed;
    for (size_t i = 0; i < njump; i++)
        if (want_jump[i]->exposed)
            pending[npending++] = want_jump[i];
    if (npending) {
        rc = trap_checkpoint(inside_pending);
        if (rc < 0) {
            first = first ? first : rc;
            njump = 0;   /* they stay int3: still probed, only slower */
        }
    }
    for (size_t i = 0; i < njump; i++) {
        struct point *pt = want_jump[i];
        pt->exposed = false;
        if ((rc = arm_jump(pt)) < 0)
            first = first ? first : rc;
    }
    npending = 0;
    pending = NULL;
    free(want_jump);
    free(exposed);
    return first;
}

int patch_apply(struct point *pt)
{
    return patch_list(&pt, 1);
}

int patch_all(void)
{
    rt_points_ready();
    return patch_list(rt_point_list(), rt_point_count());
}

/* A pool was registered: while a knob is off, its points are brought to
 * what the knobs want (a library loaded while `enabled` is 0, say); the
 * others are there already. */
void patch_pool_added(void)
{
    if (!rt_knob(RT_KNOB_ENABLED) || !rt_knob(RT_KNOB_OPTIMIZATION))
        patch_all();
}
