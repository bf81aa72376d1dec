/*
 * clockshim: an LD_PRELOAD library of the analysis harness that moves the
 * wall clock of redis-server, which Redis reads for key expiry and TIME.
 *
 * The offset, in nanoseconds, is a 64-bit integer in the file named by
 * REDISYNC_CLOCK_FILE, mapped shared at start: the harness changes it at
 * run time and the server's next read of the clock sees it. CLOCK_REALTIME
 * (and its coarse variant), gettimeofday and time are moved; the
 * monotonic clocks are not. The shim calls the kernel directly (no vDSO,
 * no dlsym) and allocates nothing, so it cannot meet the jemalloc inside
 * redis-server, with which Debian's libfaketime hangs the server at start.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const volatile int64_t *offset_ns;

__attribute__((constructor)) static void clockshim_init(void)
{
	const char *path = getenv("REDISYNC_CLOCK_FILE");
	if (path == NULL)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		offset_ns = p;
}

static void shift(struct timespec *ts)
{
	if (offset_ns == NULL)
		return;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec +
		     __atomic_load_n(offset_ns, __ATOMIC_RELAXED);
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	int r = (int)syscall(SYS_clock_gettime, clk, ts);
	if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		shift(ts);
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;
	(void)tz;
	if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0)
		return -1;
	shift(&ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
