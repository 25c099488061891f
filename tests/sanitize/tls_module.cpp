// A dlopen()ed module with one thread-local variable, like the plugins Open MPI's hwloc loads
// (libOpenCL.so.1 keeps a 4-byte thread-local): its TLS block is not in static TLS, so glibc
// mallocs it on the first access from each thread, through __tls_get_addr.
thread_local int probe_tls_value = 0;

extern "C" void* probe_tls_address() { return &probe_tls_value; }
