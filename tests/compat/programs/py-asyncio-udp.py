# asyncio datagram endpoints on 127.0.0.1
import asyncio


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.t = transport

    def datagram_received(self, data, addr):
        self.t.sendto(data[::-1], addr)


class Client(asyncio.DatagramProtocol):
    def __init__(self, fut):
        self.fut = fut

    def datagram_received(self, data, addr):
        self.fut.set_result(data)


async def main():
    loop = asyncio.get_running_loop()
    st, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    port = st.get_extra_info("sockname")[1]
    fut = loop.create_future()
    ct, _ = await loop.create_datagram_endpoint(lambda: Client(fut),
                                                remote_addr=("127.0.0.1", port))
    ct.sendto(b"stressed")
    assert await asyncio.wait_for(fut, 60) == b"desserts"
    ct.close()
    st.close()


asyncio.run(main())
print("udp echo ok")
print("OK")
