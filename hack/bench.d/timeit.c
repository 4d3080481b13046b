// timeit: the time of a command as seen inside the sandbox.
//
//	timeit CMD [ARG...]
//
// Takes CLOCK_MONOTONIC, forks and execs CMD, waits for it, takes
// CLOCK_MONOTONIC again and prints on stderr one line
//
//	cordon-bench-inner: WALL_NS CPU_US
//
// (CPU_US: user + system of CMD and every descendant it waited for), then
// exits with CMD's status. hack/bench.d/broker.sh runs the same binary as
// the command of every sandbox it compares, so the time of the work is
// measured without the sandbox's start and teardown, by the same code on
// both sides. Built static where the toolchain can: one exec of a small
// binary, no dynamic loader, added to each run alike.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: timeit CMD [ARG...]\n");
    return 2;
  }
  long long t0 = mono_ns();
  pid_t pid = fork();
  if (pid < 0) {
    perror("timeit: fork");
    return 126;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    perror("timeit: exec");
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      perror("timeit: waitpid");
      return 126;
    }
  }
  long long t1 = mono_ns();
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
  fprintf(stderr, "cordon-bench-inner: %lld %ld\n", t1 - t0, cpu);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
