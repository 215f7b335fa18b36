// The C library's allocator, set up for a host (CPU) execute or calibration: the engine and the
// thread transport allocate and free buffers of a message's or a block's size at every op (a 2 MiB
// K,V shard per ring step, three copies per message), and glibc's defaults hand such buffers back
// to the kernel when they are freed (each thread's arena trims its top, large chunks are mmapped),
// so the next one faults its pages in again and the kernel zeroes them. On this project's 2-core
// VM that was a third of the CPU time a causal run spent beyond the model at 8 ranks: ring zigzag
// 4K tokens 341.6 ms measured against 260.6 ms predicted (+31%), 289.3 ms (+11%) with the settings
// below, at the same peak RSS (docs/fidelity.md).
#pragma once

namespace meshplan::exec {

// One arena for every thread (memory one rank's thread frees is reused by the next allocation of
// any thread, so the process holds no more than before), no mmap for blocks below 32 MiB and no
// trimming: freed buffers stay mapped and are reused. Process-wide; call before the threads that
// run ranks start. No effect where the C library is not glibc.
void KeepFreedHostMemoryMapped();

}  // namespace meshplan::exec
