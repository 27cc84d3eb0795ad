/* pause: the process of the test cluster's pod sandboxes. It holds the
 * pod's namespaces until it is told to stop, and reaps the orphans a
 * sandbox's PID namespace hands it. Built static by scripts/k8s-env.sh. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void) {
	signal(SIGTERM, stop);
	signal(SIGINT, stop);
	signal(SIGCHLD, reap);
	for (;;)
		pause();
}
