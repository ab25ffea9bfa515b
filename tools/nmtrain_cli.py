"""How the Python tools end: one line on stderr and an exit code, the same for every tool
(the C++ executables' convention in cli/). Standard library only."""
import sys


def run_cli(prog, action, args, bad_input):
    """Runs action(args) and turns what it raised into the tools' exit codes: 0 done; 2 bad
    input (an instance of the bad_input class: a file, flag or value the user can fix), its
    message as is; 130 interrupted; 1 any other fault, still one line, never a traceback."""
    try:
        action(args)
    except bad_input as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a fault, not bad input (a missing module: run launch/setup.sh)
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"{prog}: error: {type(e).__name__}: {first_line}", file=sys.stderr)
        return 1
    return 0
