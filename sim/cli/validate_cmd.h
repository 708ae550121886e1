/* validate_cmd.h - `shardsim validate`: the simulator against the public
 * measurements its scenarios carry ("measured" blocks; run/validate.h).
 *
 * Parses the command's options (after "validate"): FILES or folders
 * (default scenarios/published), --json FILE, -j THREADS, --strict. Prints
 * the table, the per-source and overall medians and the thresholds' PASS or
 * FAIL lines to stdout; writes the same as JSON to --json FILE (whole or
 * not at all).
 *
 * Returns the process exit code: 0 when it ran (the thresholds only count
 * under --strict, where a FAIL gives 1); 1 on an internal error; 2 for bad
 * input or usage.
 */
#ifndef CLI_VALIDATE_CMD_H
#define CLI_VALIDATE_CMD_H

int validate_cmd(int argc, char **argv);

#endif
