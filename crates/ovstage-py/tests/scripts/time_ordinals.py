"""Script 9 (spec 17.2): time and ordinals without USD.

The application owns the ordinal <-> time table (non-uniform time steps). Three
spheres are stepped with position += velocity * dt, written each tick as a
float3 POINT column (a lanes-3 make_dltensor) and sealed with
advance_write_floor(scope=Scope.ALL); after each seal the tick is read back with
latest(<that ordinal>) and printed with its time from the table. USD population
steps are skipped because population.available() is False on ours (the reference
has population; the script then only reports that it is available).
"""
import numpy as np

import ovstage as ov

SPHERES = ["/Sim/Sphere0", "/Sim/Sphere1", "/Sim/Sphere2"]
DTS = [0.0, 0.1, 0.1, 0.05, 0.25, 0.5]  # dt before each tick; tick 1 is the initial state
F3 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=32, lanes=3)

time_of = {}
t = 0.0
for ordinal, dt in enumerate(DTS, start=1):
    t += dt
    time_of[ordinal] = round(t, 6)

with ov.Stage("time-ordinals") as stage, ov.PathDictionary(stage) as paths:
    # population.available() is False on ours (spec section 15.1 item 5).
    if ov.population.available():
        print("population available: would open a USD stage here")
    else:
        print("population unavailable: authoring the spheres directly")
    with paths.create_path_list_from_strings(SPHERES) as plist, stage.query_from_path_list(plist) as query:
        position = np.zeros((3, 3), np.float32)
        velocity = np.array([[1, 0, 0], [0, 2, 0], [0, 0, -4]], np.float32)
        token = paths.intern_token("points")
        for ordinal, dt in enumerate(DTS, start=1):
            position = position + velocity * np.float32(dt)
            tensor = ov.make_dltensor(position.reshape(-1), dtype=F3, shape=[len(SPHERES)])
            stage.write_attribute(query, token, ordinal, tensor, is_array=False,
                                  semantic=ov.AttributeSemantic.POINT).wait()
            stage.advance_write_floor(ordinal=ordinal, scope=ov.Scope.ALL).wait()
            with stage.read_attributes(query, [token], ov.OrdinalRange.latest(ordinal)) as read:
                rows = {}
                for group in read.wait().groups():
                    with group:
                        names = paths.get_path_strings(group.prim_list)
                        data = group.array(0)
                        for i in range(group.prim_count):
                            row = group.data_row_index(i) if group.has_data_index_map else i
                            rows[names[group.prim_index(i)]] = [round(float(v), 4) for v in data[row]]
            print(f"ordinal {ordinal} t={time_of[ordinal]:.2f}", [rows[s] for s in SPHERES])
        with stage.get_attribute_write_floor(None) as fq:
            floor = fq.fetch()
        print("final floor", floor, "at t =", time_of[floor])
print("done")
