// mtexit: the thread-group leader exits first (pthread_exit), then a worker
// thread ends the process with exit(7). A tracer that reports the leader's
// exit as the process's would report 0, and maybe report twice.
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *worker(void *arg)
{
	(void)arg;
	usleep(200 * 1000);
	exit(7);
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
