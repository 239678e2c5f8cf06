# multiprocessing.Pool: map, imap_unordered, apply_async, starmap
import multiprocessing as mp


def square(x):
    return x * x


def add(a, b):
    return a + b


if __name__ == "__main__":
    with mp.Pool(4) as pool:
        assert pool.map(square, range(20)) == [x * x for x in range(20)]
        assert sorted(pool.imap_unordered(square, range(10))) == [x * x for x in range(10)]
        assert pool.apply_async(add, (2, 3)).get(timeout=60) == 5
        assert pool.starmap(add, [(1, 2), (3, 4)]) == [3, 7]
    print("pool of", 4, "workers mapped 20 items")
    print("OK")
