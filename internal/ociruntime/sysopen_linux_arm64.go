package ociruntime

// sysOpen is open(2)'s number, where the architecture has one.
const sysOpen = -1
