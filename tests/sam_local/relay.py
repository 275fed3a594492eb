"""A TCP relay: listens on HOST (port chosen by the system), forwards each connection to
TARGET_HOST:TARGET_PORT, and prints the port it listens on as its first stdout line.

    python tests/sam_local/relay.py HOST TARGET_HOST TARGET_PORT

SAM CLI 1.170 ignores `--docker-network host` (it skips connecting a container to a network
named "host"), so a function's container stays on the engine's default bridge (docker0, or
podman's `podman` network), and moto listens on the host's loopback, which a bridged
container cannot reach. The relay listens on the bridge's gateway address, which the
container reaches. It binds with IP_FREEBIND: podman creates its bridge (and the gateway
address) only while a container runs.
"""

import asyncio
import socket
import sys

IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(host: str, target_host: str, target_port: int) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            tr, tw = await asyncio.open_connection(target_host, target_port)
        except OSError as e:
            print(f"relay: {target_host}:{target_port}: {e}", file=sys.stderr, flush=True)
            w.close()
            return
        await asyncio.gather(pipe(r, tw), pipe(tr, w))

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
    sock.bind((host, 0))
    server = await asyncio.start_server(handle, sock=sock)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
