# multiprocessing with the forkserver start method (a unix socket server in a child)
import multiprocessing as mp


def cube(x):
    return x ** 3


if __name__ == "__main__":
    ctx = mp.get_context("forkserver")
    with ctx.Pool(2) as pool:
        assert pool.map(cube, range(5)) == [0, 1, 8, 27, 64]
    print("forkserver pool ok")
    print("OK")
