# asyncio streams: an echo server on 127.0.0.1 and a client in the same program
import asyncio


async def handle(reader, writer):
    while data := await reader.readline():
        writer.write(data.upper())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for word in ("hello", "world"):
            writer.write(word.encode() + b"\n")
            await writer.drain()
            assert await asyncio.wait_for(reader.readline(), 60) == word.upper().encode() + b"\n"
        writer.close()
        await writer.wait_closed()
        # a second client through "localhost"
        r2, w2 = await asyncio.open_connection("localhost", port, family=2)
        w2.write(b"again\n")
        assert await asyncio.wait_for(r2.readline(), 60) == b"AGAIN\n"
        w2.close()
    return port


print("echo server on port", asyncio.run(main()))
print("OK")
