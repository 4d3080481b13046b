// What the two C inits of the sandbox share (sandboxinit_linux.c,
// sessioninit_linux.c).
#ifndef CORDON_SANDBOXINIT_H
#define CORDON_SANDBOXINIT_H

// cordon_load_seccomp loads the filter cordon handed over in the
// environment on every thread, removes the variable, and exits 125 when
// there is none or it cannot be loaded. When the filter has a listener
// (cordon's broker), it is sent over broker_sock (a unix socket) as one
// byte "L" with the descriptor, then closed.
void cordon_load_seccomp(int broker_sock);

#endif
