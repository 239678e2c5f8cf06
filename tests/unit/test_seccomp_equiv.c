/* The filter the handler loads (sbx_seccomp_build: laid out by hand,
 * some 330 instructions) against libseccomp's compile of the same rules
 * (sbx_seccomp_build_libseccomp, some 1,720): both programs run in a
 * classic-BPF interpreter here over every call number below 1,024, the
 * edges of the x32 range and beyond, four architectures, and a lattice
 * of argument values (each argument alone through a set of values that
 * sit on and beside every constant a rule names, with high bits set and
 * not; pairs and a 4-argument grid of ids; random picks), and must give
 * the same answer for every input. The kernel's own verdict on the
 * loaded filter is tests/unit/test_seccomp's. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "sandbox/internal.h"
#include "tests/tap.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define BAD 0xdeadbeefu		/* the interpreter met what it does not know */

/* Classic BPF as seccomp runs it: A, X, 16 words of scratch memory,
 * loads from struct seccomp_data only. */
static uint32_t run_bpf(const struct sbx_bpf *b, const struct seccomp_data *d)
{
	const struct sock_filter *f = b->insns;
	size_t n = b->len / sizeof *f;
	uint32_t a = 0, x = 0, mem[16] = { 0 };
	const unsigned char *data = (const unsigned char *)d;

	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;

		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			if (BPF_MODE(i->code) == BPF_ABS && BPF_SIZE(i->code) == BPF_W &&
			    i->k % 4 == 0 && i->k + 4 <= sizeof *d)
				memcpy(&v, data + i->k, 4);
			else if (BPF_MODE(i->code) == BPF_IMM)
				v = i->k;
			else if (BPF_MODE(i->code) == BPF_MEM && i->k < 16)
				v = mem[i->k];
			else if (BPF_MODE(i->code) == BPF_LEN)
				v = sizeof *d;
			else
				return BAD;
			if (BPF_CLASS(i->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (i->k >= 16)
				return BAD;
			mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return BAD;
			}
			break;
		case BPF_JMP: {
			int t;

			if (BPF_OP(i->code) == BPF_JA) {
				pc += i->k;
				break;
			}
			switch (BPF_OP(i->code)) {
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return BAD;
			}
			pc += t ? i->jt : i->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return BAD;
		}
	}
	return BAD;		/* ran off the end */
}

static uint64_t vals[128];
static size_t nvals;

static void add(uint64_t v)
{
	for (size_t i = 0; i < nvals; i++)
		if (vals[i] == v)
			return;
	if (nvals < sizeof vals / sizeof vals[0])
		vals[nvals++] = v;
}

/* every constant a rule names, its neighbours, and each with high bits */
static void make_values(uint32_t id)
{
	static const uint64_t base[] = {
		0, 1, 2, 3, 9, 10, 11, 15, 16, 17, 44, 0x7fffffff, 0x80000000,
		0xfffffffe, 0xffffffff, TIOCSTI, TIOCSTI + 1, TIOCLINUX, TIOCLINUX - 1,
		CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
		CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME, 0x11, 0x3d0f00,
		0x3d0f00 | CLONE_NEWNET, 0x7e020080 | 0x11,
	};
	static const uint64_t high[] = { 0, 1ULL << 32, 0xffffffff00000000ULL, 1ULL << 63 };

	for (size_t h = 0; h < sizeof high / sizeof high[0]; h++) {
		for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
			add(base[i] | high[h]);
		add(id | high[h]);
		add((id - 1) | high[h]);
		add((id + 1) | high[h]);
	}
}

struct tally {
	unsigned long inputs, differ, bad;
	char first[512];
};

static void compare(const struct sbx_bpf *mine, const struct sbx_bpf *ref,
		    const struct seccomp_data *d, struct tally *t)
{
	uint32_t m = run_bpf(mine, d), r = run_bpf(ref, d);

	t->inputs++;
	if (m == BAD || r == BAD)
		t->bad++;
	if (m == r)
		return;
	if (!t->differ++)
		snprintf(t->first, sizeof t->first,
			 "arch %#x nr %d args %#llx %#llx %#llx %#llx: hand-laid %#x, libseccomp %#x",
			 d->arch, d->nr, (unsigned long long)d->args[0],
			 (unsigned long long)d->args[1], (unsigned long long)d->args[2],
			 (unsigned long long)d->args[3], m, r);
}

static void sweep_nr(const struct sbx_bpf *mine, const struct sbx_bpf *ref, uint32_t arch,
		     int nr, uint32_t id, struct tally *t)
{
	static const uint64_t bases[] = { 0, 65534, ~0ULL };
	struct seccomp_data d = { .nr = nr, .arch = arch };
	uint64_t grid[8];

	/* one argument at a time, the others all 0, all the id, all -1 */
	for (size_t b = 0; b < 3; b++)
		for (unsigned i = 0; i < 6; i++)
			for (size_t v = 0; v < nvals; v++) {
				for (unsigned k = 0; k < 6; k++)
					d.args[k] = bases[b] == 65534 ? id : bases[b];
				d.args[i] = vals[v];
				compare(mine, ref, &d, t);
			}
	/* every pair of the first four arguments over the first 40 values */
	for (unsigned i = 0; i < 4; i++)
		for (unsigned j = i + 1; j < 4; j++)
			for (size_t v = 0; v < nvals && v < 40; v++)
				for (size_t w = 0; w < nvals && w < 40; w++) {
					memset(d.args, 0, sizeof d.args);
					d.args[i] = vals[v];
					d.args[j] = vals[w];
					compare(mine, ref, &d, t);
				}
	/* the four id arguments over the values an id rule tells apart */
	grid[0] = 0; grid[1] = id; grid[2] = 0xffffffff; grid[3] = id + 1;
	grid[4] = id | 1ULL << 32; grid[5] = ~0ULL; grid[6] = 16; grid[7] = 0xffffffffULL << 32 | id;
	for (unsigned g = 0; g < 8 * 8 * 8 * 8; g++) {
		memset(d.args, 0, sizeof d.args);
		for (unsigned k = 0; k < 4; k++)
			d.args[k] = grid[(g >> (3 * k)) & 7];
		compare(mine, ref, &d, t);
	}
	/* random picks, all six arguments */
	for (unsigned r = 0; r < 500; r++) {
		for (unsigned k = 0; k < 6; k++)
			d.args[k] = (rand() & 7) ? vals[(size_t)rand() % nvals] :
				    (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand();
		compare(mine, ref, &d, t);
	}
}

int main(void)
{
	const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0 };
	const uint32_t id = SBX_BLOCK_ID;

	srand(20261205);
	make_values(id);
	for (int netlink = 0; netlink < 2; netlink++) {
		struct sbx_seccomp_cfg c = { .netlink_route = netlink, .uid = id, .gid = id };
		struct sbx_bpf mine = { 0 }, ref = { 0 }, pre = { 0 };
		struct tally t = { 0 };
		int rc1 = sbx_seccomp_build(&c, &mine), rc2 = sbx_seccomp_build_libseccomp(&c, &ref);

		if (!tap_ok(rc1 == 0 && rc2 == 0, "netlink_route %d: both build (%d, %d)",
			    netlink, rc1, rc2))
			continue;
		tap_ok(mine.len / 8 * 3 < ref.len / 8,
		       "netlink_route %d: the hand-laid filter is under a third of libseccomp's "
		       "(%zu and %zu instructions)", netlink, mine.len / 8, ref.len / 8);
		/* what the handler embeds is this build */
		rc1 = sbx_seccomp_prebuilt(netlink, &pre);
		tap_ok(rc1 == 0 && pre.len == mine.len && !memcmp(pre.insns, mine.insns, pre.len),
		       "netlink_route %d: the embedded filter is the hand-laid one", netlink);
		sbx_bpf_free(&pre);
		for (int nr = 0; nr < 1024; nr++)
			sweep_nr(&mine, &ref, AUDIT_ARCH_X86_64, nr, id, &t);
		{
			static const uint32_t edges[] = {
				0x3fffffff, 0x40000000, 0x40000001, 0x4000003b, 0x40000200,
				0x40000201, 0x7fffffff, 0x80000000, 0xbfffffff, 0xfffffffe, 0xffffffff,
			};

			for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
				sweep_nr(&mine, &ref, AUDIT_ARCH_X86_64, (int)edges[e], id, &t);
		}
		for (size_t a = 1; a < sizeof arches / sizeof arches[0]; a++)
			for (int nr = 0; nr < 1024; nr += 7)
				sweep_nr(&mine, &ref, arches[a], nr, id, &t);
		tap_ok(t.bad == 0, "netlink_route %d: the interpreter knew every instruction "
		       "(%lu inputs it did not)", netlink, t.bad);
		tap_ok(t.differ == 0 && t.inputs > 10000000,
		       "netlink_route %d: the same answer for all %lu inputs (%lu differ)%s%s",
		       netlink, t.inputs, t.differ, t.differ ? "; first: " : "", t.first);
		sbx_bpf_free(&mine);
		sbx_bpf_free(&ref);
	}
	return tap_done();
}
