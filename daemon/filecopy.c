// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Snapshot copies into regular files, off the main loop (see filecopy.h).
 * The main loop and the thread each hold a reference; the last one frees.
 * The eventfd lives as long as the struct, so the thread's final write
 * never lands on an fd number the main loop has closed and reused.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "filecopy.h"

#define FILE_COPY_CHUNK (1U << 20)

struct file_copy {
	int spool, target, done_fd;
	off_t size;
	_Atomic off_t off;
	_Atomic int err;
	atomic_bool done;
	atomic_int refs;
};

static atomic_int nr_file_copies;

static void fc_put(struct file_copy *fc)
{
	if (atomic_fetch_sub(&fc->refs, 1) != 1)
		return;
	close(fc->done_fd);
	free(fc);
}

static int fc_copy(struct file_copy *fc, char *buf)
{
	off_t off = 0;

	while (off < fc->size) {
		size_t want = fc->size - off < FILE_COPY_CHUNK ? (size_t)(fc->size - off) : FILE_COPY_CHUNK;
		ssize_t n;

		/* Given up by the main loop (the client was told): write no more. */
		if (atomic_load(&fc->refs) == 1)
			return -ECANCELED;
		n = pread(fc->spool, buf, want, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(fc->target, buf + done, (size_t)(n - done), off + done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		off += n;
		atomic_store(&fc->off, off);
	}
	/* An existing longer file (replaced with --force) ends where the snapshot does. */
	return ftruncate(fc->target, fc->size) < 0 ? -errno : 0;
}

static void *fc_work(void *arg)
{
	struct file_copy *fc = arg;
	uint64_t one = 1;
	char *buf = malloc(FILE_COPY_CHUNK);
	int r = buf ? fc_copy(fc, buf) : -ENOMEM;

	free(buf);
	close(fc->spool);
	close(fc->target);
	atomic_store(&fc->err, r);
	atomic_store(&fc->done, true);
	atomic_fetch_sub(&nr_file_copies, 1);
	(void)!write(fc->done_fd, &one, sizeof(one));
	fc_put(fc);
	return NULL;
}

int file_copy_start(int spool, int target, off_t size, struct file_copy **ret)
{
	struct file_copy *fc = NULL;
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	int r;

	if (atomic_fetch_add(&nr_file_copies, 1) >= FILE_COPY_MAX) {
		r = -EBUSY;
		goto fail;
	}
	fc = calloc(1, sizeof(*fc));
	if (!fc) {
		r = -ENOMEM;
		goto fail;
	}
	fc->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fc->done_fd < 0) {
		r = -errno;
		goto fail;
	}
	fc->spool = spool;
	fc->target = target;
	fc->size = size;
	atomic_init(&fc->refs, 2);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* The main loop takes the signals (signalfd); the thread none. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&t, &a, fc_work, fc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (r < 0) {
		close(fc->done_fd);
		goto fail;
	}
	*ret = fc;
	return 0;
fail:
	free(fc);
	atomic_fetch_sub(&nr_file_copies, 1);
	close(spool);
	close(target);
	return r;
}

int file_copy_fd(const struct file_copy *fc)
{
	return fc->done_fd;
}

off_t file_copy_progress(const struct file_copy *fc)
{
	return atomic_load(&((struct file_copy *)fc)->off);
}

bool file_copy_done(const struct file_copy *fc, int *ret_err)
{
	struct file_copy *f = (struct file_copy *)fc;

	if (!atomic_load(&f->done))
		return false;
	*ret_err = atomic_load(&f->err);
	return true;
}

void file_copy_release(struct file_copy *fc)
{
	if (fc)
		fc_put(fc);
}
