# multiprocessing.Manager: dict, list, Namespace shared across processes
import multiprocessing as mp


def fill(d, lst, ns, i):
    d[i] = i * i
    lst.append(i)
    ns.last = i


if __name__ == "__main__":
    with mp.Manager() as m:
        d, lst, ns = m.dict(), m.list(), m.Namespace()
        ps = [mp.Process(target=fill, args=(d, lst, ns, i)) for i in range(5)]
        for p in ps:
            p.start()
        for p in ps:
            p.join(60)
        assert dict(d) == {i: i * i for i in range(5)}, dict(d)
        assert sorted(lst) == list(range(5))
        assert ns.last in range(5)
    print("manager shared a dict, a list and a namespace with 5 processes")
    print("OK")
