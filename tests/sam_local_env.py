"""What `sam local invoke <Fn> --env-vars <env.json>` gives each function, computed by SAM's
own code (template provider, intrinsic resolution, env.json overrides, AWS variables), and
where the Runtime Interface Emulator it runs them under lives.

    python tests/sam_local_env.py template.yaml events/env.json

prints {"rie": <path>, "functions": {<LogicalId>: {"binary": <BuildProperties.Binary>,
"env": {...}}}}. Run it with a clean environment: SAM lets the shell override declared
variables, exactly as it would for `sam local invoke`.
"""

import json
import os
import platform
import sys

import samcli
from samcli.commands.local.lib.local_lambda import LocalLambdaRunner
from samcli.lib.providers.sam_function_provider import SamFunctionProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider


def main(template, env_file):
    stacks, _ = SamLocalStackProvider.get_stacks(template)
    provider = SamFunctionProvider(stacks)
    with open(env_file) as f:
        overrides = json.load(f)
    runner = LocalLambdaRunner(
        local_runtime=None,
        function_provider=provider,
        cwd=os.path.dirname(os.path.abspath(template)),
        real_path=os.path.dirname(os.path.abspath(template)),
        env_vars_values=overrides,
    )
    functions = {}
    for fn in provider.get_all():
        binary = ((fn.metadata or {}).get("BuildProperties") or {}).get("Binary")
        functions[fn.name] = {"binary": binary, "env": runner._make_env_vars(fn).resolve()}
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    rie = os.path.join(os.path.dirname(samcli.__file__), "local", "rapid", f"aws-lambda-rie-{arch}")
    json.dump({"rie": rie, "functions": functions}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
