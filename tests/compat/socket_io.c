/*
 * A 32-bit program for tests/compat_calls.rs. Pinned to the CPU it is given,
 * it sends and receives datagrams on a Unix socket pair for the seconds it
 * is given, through each way a 32-bit program reaches the socket layer:
 * read(2)/write(2), the direct sendto(2)/recvfrom(2) and the multiplexed
 * socketcall(2). Then it prints one line of JSON like netto-loadgen's, so
 * the test compares netto's socket windows with the process's system time.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIZE 8000
#define SOCKETCALL_SENDTO 11
#define SOCKETCALL_RECVFROM 12

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int check(long got, const char *what)
{
	if (got != SIZE) {
		perror(what);
		exit(1);
	}
	return 1;
}

int main(int argc, char **argv)
{
	static char buf[SIZE];
	unsigned long calls = 0;
	struct rusage usage;
	cpu_set_t cpus;
	double end;
	int sv[2];

	if (argc != 3) {
		fprintf(stderr, "usage: %s CPU SECONDS\n", argv[0]);
		return 2;
	}
	CPU_ZERO(&cpus);
	CPU_SET(atoi(argv[1]), &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)) {
		perror("setup");
		return 1;
	}
	end = now() + atof(argv[2]);
	while (now() < end) {
		unsigned long send_args[6] = { sv[0], (unsigned long)buf, SIZE, 0, 0, 0 };
		unsigned long recv_args[6] = { sv[1], (unsigned long)buf, SIZE, 0, 0, 0 };

		check(write(sv[0], buf, SIZE), "write");
		check(read(sv[1], buf, SIZE), "read");
		check(syscall(SYS_sendto, sv[0], buf, SIZE, 0, NULL, 0), "sendto");
		check(syscall(SYS_recvfrom, sv[1], buf, SIZE, 0, NULL, NULL), "recvfrom");
		check(syscall(SYS_socketcall, SOCKETCALL_SENDTO, send_args), "socketcall sendto");
		check(syscall(SYS_socketcall, SOCKETCALL_RECVFROM, recv_args), "socketcall recvfrom");
		calls += 6;
	}
	getrusage(RUSAGE_SELF, &usage);
	printf("{\"calls\":%lu,\"bytes\":%llu,\"stime_ns\":%llu}\n", calls,
	       (unsigned long long)calls * SIZE,
	       (unsigned long long)usage.ru_stime.tv_sec * 1000000000ull +
		       (unsigned long long)usage.ru_stime.tv_usec * 1000ull);
	return 0;
}
