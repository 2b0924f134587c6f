"""A producer running ahead of a consumer on one Stage: the producer writes and seals ticks
without waiting; the consumer polls the write floor and reads what was sealed since its last look."""

import threading

import numpy as np

import ovstage as ov

TICKS = 100

with ov.Stage("runtime-loop") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings([f"/Robot/joint{i}" for i in range(8)]) as prims, \
            stage.query_from_path_list(prims) as query:
        angle = paths.intern_token("angle")

        def producer() -> None:
            for tick in range(1, TICKS + 1):
                values = np.full(8, tick * 0.01, np.float32)
                stage.write_attribute(query, angle, tick, values, is_array=False)  # fire and forget
                stage.advance_write_floor(ordinal=tick)

        seen = []

        def consumer() -> None:
            last = 0
            while last < TICKS:
                with stage.get_attribute_write_floor(None) as floor_query:
                    floor = floor_query.fetch(timeout=0) if floor_query.wait().handle else last
                if floor <= last:
                    continue  # nothing new sealed: poll again
                with stage.get_oldest_preserved_ordinal() as oldest:
                    start = max(last + 1, oldest.fetch())
                if start > floor:  # the history window passed the floor read above: read it again
                    continue
                with stage.read_attributes(query, [angle], ov.OrdinalRange.between(start, floor)) as read:
                    for group in read.wait().groups():
                        with group:
                            seen.append(float(group.array(0)[0]))
                last = floor

        threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen and seen == sorted(seen), seen
        print(f"consumer saw {len(seen)} updates, last angle {seen[-1]:.2f}")
