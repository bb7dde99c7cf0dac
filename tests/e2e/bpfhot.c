// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A BPF program that runs hot, for the BPF-symbol e2e test: a socket filter
 * named "perfrec_hot" whose body is a long straight run of ALU instructions
 * (so each packet spends microseconds in JITed code), attached with
 * SO_ATTACH_BPF to a UDP socket on loopback that this program then floods
 * with datagrams.  The filter drops every packet (returns 0), so nothing
 * piles up.  Usage: bpfhot SECONDS [READY_FILE]; READY_FILE is created once
 * the program is loaded and attached, and the program is printed as
 * "id=N tag=HEX".  Exit 77 when bpf() is not permitted or the JIT is off.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

/* Start here; halved while the socket's option memory (optmem_max) refuses it. */
#define MAX_ALU 12000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int load_filter(size_t nr_alu)
{
	size_t n = nr_alu + 3;
	struct bpf_insn *insns = calloc(n, sizeof(*insns));
	int fd;

	if (!insns)
		return -ENOMEM;
	/* r0 = 0; r0 += 1 (nr_alu times); r0 = 0; exit: keep 0 bytes (drop). */
	insns[0] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 };
	for (size_t i = 1; i <= nr_alu; i++)
		insns[i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 };
	insns[nr_alu + 1] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 };
	insns[nr_alu + 2] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "perfrec_hot", "GPL", insns, n, NULL);
	if (fd < 0 && fd == -1)
		fd = -errno;
	free(insns);
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	struct bpf_prog_info info;
	uint32_t ilen = sizeof(info);
	char payload[64] = "perfrec";
	double seconds, end;
	int prog, rx, tx;

	if (argc < 2) {
		fprintf(stderr, "usage: bpfhot SECONDS [READY_FILE]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    getsockname(rx, (struct sockaddr *)&addr, &alen) < 0) {
		fprintf(stderr, "bpfhot: cannot set up the loopback socket: %s\n", strerror(errno));
		return 1;
	}
	for (size_t nr_alu = MAX_ALU;; nr_alu /= 2) {
		prog = load_filter(nr_alu);
		if (prog < 0) {
			fprintf(stderr, "bpfhot: cannot load the socket filter: %s\n", strerror(-prog));
			return prog == -EPERM || prog == -EACCES || prog == -ENOSYS ? 77 : 1;
		}
		if (setsockopt(rx, SOL_SOCKET, SO_ATTACH_BPF, &prog, sizeof(prog)) == 0)
			break;
		if (errno != ENOMEM || nr_alu < 1000) {
			fprintf(stderr, "bpfhot: cannot attach the filter: %s\n", strerror(errno));
			return 1;
		}
		close(prog);
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog, &info, &ilen) < 0) {
		fprintf(stderr, "bpfhot: cannot read the program's info: %s\n", strerror(errno));
		return 1;
	}
	if (!info.jited_prog_len) {
		fprintf(stderr, "bpfhot: the program is not JITed (net.core.bpf_jit_enable=0?)\n");
		return 77;
	}
	printf("id=%u tag=", info.id);
	for (int i = 0; i < BPF_TAG_SIZE; i++)
		printf("%02x", info.tag[i]);
	printf("\n");
	fflush(stdout);
	if (argc > 2) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
	end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 64; i++)
			sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&addr, sizeof(addr));
	close(prog);
	return 0;
}
