"""Script 3 (spec 17.2): producer/consumer on one Stage.

Four sensor prims with one single-prim query each. Ticks 1..6 write rotating
subsets of the sensors; tick 5 deletes one sensor with delete_attributes(q, [], t).
The consumer polls the global write floor and reads what changed since its last
look with OrdinalRange.between(last + 1, floor), printing value groups and
tombstone groups. With --threads the producer and the consumer run in two
threads, in lockstep (the producer waits until the consumer has seen each tick,
so the output is the same as the single-threaded run).
"""
import sys
import threading

import numpy as np

import ovstage as ov

TICKS = 6
SENSORS = [f"/Lab/sensor{i}" for i in range(4)]


def subset(tick):
    """The sensors written at a tick: a rotating pair."""
    return [(tick + k) % len(SENSORS) for k in range(2)]


def main(threaded):
    with ov.Stage("producer-consumer") as stage, ov.PathDictionary(stage) as paths:
        reading = paths.intern_token("reading")
        lists = [paths.create_path_list_from_strings([p]) for p in SENSORS]
        queries = [stage.query_from_path_list(pl) for pl in lists]
        all_list = paths.create_path_list_from_strings(SENSORS)
        all_query = stage.query_from_path_list(all_list)
        sealed = threading.Semaphore(0)
        seen = threading.Semaphore(0)

        def produce(tick):
            # The producer does not wait for its writes before sealing, but it
            # keeps their Operations until the tick is sealed: the reference drops
            # a payload when its Operation is dropped unwaited and may then read
            # reused memory (spec section 15.3 item 2; ours keeps the payload
            # alive until the op has executed, so dropping them is safe on ours).
            ops = []
            if tick == 5:
                ops.append(stage.delete_attributes(queries[1], [], tick))  # the whole prim
            for i in subset(tick):
                if tick == 5 and i == 1:
                    continue
                value = np.array([tick * 10.0 + i])
                ops.append(stage.write_attribute(queries[i], reading, tick, value, is_array=False))
            stage.advance_write_floor(ordinal=tick)
            for op in ops:
                op.wait()

        def consume(last):
            with stage.get_attribute_write_floor(None) as fq:
                floor = fq.fetch()
            if floor <= last:
                return last
            lines = []
            with stage.read_attributes(all_query, [reading], ov.OrdinalRange.between(last + 1, floor)) as read:
                for group in read.wait().groups():
                    with group:
                        names = paths.get_path_strings(group.prim_list)
                        if group.is_delete:
                            assert group.tensor_count == 0
                            lines += [f"  tombstone {names[group.prim_index(i)]}" for i in range(group.prim_count)]
                            continue
                        values = group.array(0)
                        for i in range(group.prim_count):
                            row = group.data_row_index(i) if group.has_data_index_map else i
                            lines.append(f"  value {names[group.prim_index(i)]} = {float(values[row]):.1f}")
            print(f"floor {floor}: changes since {last + 1}")
            for line in sorted(lines):
                print(line)
            return floor

        if threaded:
            def producer():
                for tick in range(1, TICKS + 1):
                    produce(tick)
                    sealed.release()
                    seen.acquire()

            def consumer():
                last = 0
                while last < TICKS:
                    sealed.acquire()
                    new = last
                    while new == last:  # the floor advance may still be in flight
                        new = consume(last)
                    last = new
                    seen.release()

            threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            last = 0
            for tick in range(1, TICKS + 1):
                produce(tick)
                last = consume(last)

        all_query.release().wait()
        all_list.release()
        for q, pl in zip(queries, lists):
            q.release().wait()
            pl.release()
    print("done")


main("--threads" in sys.argv[1:])
