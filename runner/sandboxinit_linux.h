// What the two C inits of the sandbox share (sandboxinit_linux.c,
// sessioninit_linux.c).
#ifndef CORDON_SANDBOXINIT_H
#define CORDON_SANDBOXINIT_H

// cordon_load_seccomp loads the filter cordon handed over in the
// environment on every thread, removes the variable, and exits 125 when
// there is none or it cannot be loaded.
void cordon_load_seccomp(void);

#endif
