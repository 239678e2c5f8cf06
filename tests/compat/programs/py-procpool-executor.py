# concurrent.futures.ProcessPoolExecutor and ThreadPoolExecutor
import concurrent.futures as cf
import math


def is_prime(n):
    if n < 2:
        return False
    return all(n % k for k in range(2, int(math.isqrt(n)) + 1))


if __name__ == "__main__":
    nums = list(range(1000, 1200))
    with cf.ProcessPoolExecutor(max_workers=4) as ex:
        primes = [n for n, p in zip(nums, ex.map(is_prime, nums, chunksize=10)) if p]
        fut = ex.submit(pow, 2, 100)
        assert fut.result(timeout=60) == 2 ** 100
    with cf.ThreadPoolExecutor(max_workers=8) as ex:
        assert sorted(f.result() for f in cf.as_completed(
            [ex.submit(is_prime, n) for n in nums])).count(True) == len(primes)
    print(len(primes), "primes between 1000 and 1200")
    assert len(primes) == 28
    print("OK")
