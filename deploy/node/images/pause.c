/*
 * pause: the process that holds a pod sandbox's namespaces open.
 *
 * It sleeps until told to stop (SIGINT/SIGTERM -> exit 0) and, as PID 1 of a
 * pod that shares its PID namespace, reaps the zombies re-parented to it.
 * Built statically by node.sh for the localhost/pause image.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction on_stop = {.sa_handler = stop};
	struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};

	if (sigaction(SIGINT, &on_stop, NULL) < 0 || sigaction(SIGTERM, &on_stop, NULL) < 0 ||
	    sigaction(SIGCHLD, &on_child, NULL) < 0)
		return EXIT_FAILURE;
	for (;;)
		pause();
}
