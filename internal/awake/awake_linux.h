// The state package awake's Go side and its keeper thread share.
#ifndef CORDON_AWAKE_H
#define CORDON_AWAKE_H

#include <stdint.h>

enum { AWAKE_PARKED = 0, AWAKE_SPINNING = 1 };

struct awake_shared {
	uint64_t seq;   // Poke's counter
	uint64_t spins; // how many spins ended (tests, benchmarks)
	int32_t state;  // AWAKE_PARKED (the keeper sleeps on it) or AWAKE_SPINNING
	int32_t pad;
};

struct awake_shared *awake_shared(void);
int awake_start(int64_t window_ns);

#endif
