/* harness.h - the calibration harness: measure a GPU, replay a program on it.
 *
 * Entry point of `shardsim-calib <verb> ...` when built with CUDA
 * (SS_WITH_CUDA); calib/main.c passes the verb and the arguments after it.
 * Verbs:
 *   gemm    cuBLAS GEMMs (bf16, fp16, fp32 strict and tf32, fp8 where the
 *           device has it) over a list of shapes
 *   copy    cudaMemcpyAsync H2D, D2H (pinned and pageable) and D2D over a
 *           size sweep
 *   launch  launch overhead of an empty kernel, on the host and on the device
 *   coll    NCCL collectives over a size sweep, printed like nccl-tests
 *           (one process over the local GPUs, or one rank per process under
 *           mpirun when built with MPI)
 *   replay  one rank of a scenario's simulated program, executed op by op on
 *           one GPU; writes a measured summary `shardsim diff` compares
 *   all     gemm + copy + launch + coll in a budget of a few minutes
 * Each verb writes its measurements as one JSON file with -o (written to a
 * temporary file, then renamed); docs/HARNESS.md gives the formats.
 *
 * hx_main prints its own usage and messages (to stdout and stderr): it is
 * CLI code. It returns a process exit code: 0 success; 2 bad usage or bad
 * input (unknown verb or option, a scenario that does not load, a file that
 * cannot be read or written), as `shardsim` does; 1 any other failure (no
 * GPU, a CUDA, cuBLAS or NCCL call that failed, wrong collective results).
 * It never exits the process and leaves the device usable for the caller.
 * argv holds the argc arguments after the verb: hx_main(argv[1], argc - 2,
 * argv + 2) from main(). A first argument equal to the verb itself is
 * skipped, so the getopt-style hx_main(argv[1], argc - 1, argv + 1) works
 * too. Nothing is modified. Not thread-safe: one call at a time.
 */
#ifndef HARNESS_H
#define HARNESS_H

int hx_main(const char *verb, int argc, char **argv);

/* The usage text hx_main prints for a bad command line (static storage). */
const char *hx_usage(void);

#endif
