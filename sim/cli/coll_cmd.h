/* coll_cmd.h - `shardsim coll`: the network model beside nccl-tests.
 *
 * Parses the command's options (after "coll"), runs run/coll.h, prints the
 * table to stdout or -o FILE (written whole), and returns the process exit
 * code: 0, 2 for bad input or usage, 1 otherwise. The only code of the
 * command that prints.
 */
#ifndef CLI_COLL_CMD_H
#define CLI_COLL_CMD_H

int coll_cmd(int argc, char **argv);

#endif
