/* producer-consumer: a producer writes and seals one tick at a time; a
 * consumer polls the global write floor and reads only what changed since
 * it last looked, value groups and tombstone groups.
 *
 *   producer-consumer            producer and consumer take turns
 *   producer-consumer --threads  they run at once, on two threads
 *
 * The output is the same either way: the consumer reports one tick at a
 * time, and the versioned store answers a change read for an older tick
 * even after the producer has sealed newer ones. The producer stays at
 * most WINDOW ticks ahead of the consumer (inside the stage's default
 * retention of four floor advances). */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <ovstage/ovstage.h>

#include "../common/example_util.h"

#define SENSORS 4
#define TICKS 8
#define DELETE_TICK 5
#define WINDOW 3

static const ovx_string_t sensor_paths[SENSORS] = {
    literal_to_ovx_string("/Field/Sensor0"),
    literal_to_ovx_string("/Field/Sensor1"),
    literal_to_ovx_string("/Field/Sensor2"),
    literal_to_ovx_string("/Field/Sensor3"),
};

struct shared
{
    ovstage_instance_t* stage;
    ovx_token_t temperature;
    ovstage_query_handle_t all;       /* every sensor */
    ovstage_query_handle_t survivors; /* every sensor but Sensor2 */
    atomic_ullong consumed;           /* last tick the consumer reported */
    unsigned long long next;          /* consumer: next tick to report */
};

/* Producer: write tick `t` (and delete Sensor2 at DELETE_TICK), then seal. */
static void produce(struct shared* s, unsigned long long t)
{
    float values[SENSORS];
    int64_t shape[1];
    ovx_string_or_token_t attr = { s->temperature, { NULL, 0 } };
    int remove = t == DELETE_TICK;
    ovstage_query_handle_t target = t < DELETE_TICK ? s->all : s->survivors;
    int rows = t < DELETE_TICK ? SENSORS : SENSORS - 1;
    static const int survivor_index[SENSORS - 1] = { 0, 1, 3 };
    for (int i = 0; i < rows; ++i)
    {
        int sensor = t < DELETE_TICK ? i : survivor_index[i];
        values[i] = 20.0f + (float)t + 0.1f * (float)sensor;
    }
    DLTensor tensor = example_f32_rows(values, shape, rows, 1);
    ovstage_write_data_t data;
    memset(&data, 0, sizeof data);
    data.tensors = &tensor;
    data.tensor_count = 1;
    ovstage_op_id_t write = example_enqueued("write_attribute", ovstage_write_attribute(s->stage, target, attr, t, data, OVSTAGE_PRIM_MODE_UPSERT));
    if (remove)
    {
        ovx_string_t gone = sensor_paths[2];
        ovstage_query_handle_t q = example_query(s->stage, &gone, 1);
        /* No attribute list: the whole prim goes. */
        example_wait(s->stage, "delete_attributes",
                     example_enqueued("delete_attributes", ovstage_delete_attributes(s->stage, q, NULL, 0, t)));
        example_wait(s->stage, "release_query", example_enqueued("release_query", ovstage_release_query(s->stage, q)));
    }
    /* The advance runs after every mutation at or below `t`, so it can be
     * submitted right behind the write. The payload must stay valid until
     * the write completes, hence the wait. */
    ovstage_write_floor_desc_t floor = { t, OVSTAGE_SCOPE_ALL, NULL, 0 };
    ovstage_op_id_t seal = example_enqueued("advance_write_floor", ovstage_advance_write_floor(s->stage, &floor));
    example_wait(s->stage, "write_attribute", write);
    example_wait(s->stage, "advance_write_floor", seal);
}

/* Consumer: one non-blocking look at the global write floor; reports every
 * tick it now covers. Returns the number of ticks reported. */
static int consume(struct shared* s)
{
    ovstage_instance_t* stage = s->stage;
    // [snippet:poll-write-floor]
    /* The global write floor: an ordinal query with an empty attribute.
     * fetch_ordinal with timeout 0 polls: TIMEOUT means "not answered yet,
     * look again later". */
    ovx_string_or_token_t global = { OVX_INVALID_TOKEN, { NULL, 0 } };
    ovstage_ordinal_query_handle_t fq = OVSTAGE_INVALID_ORDINAL_QUERY_HANDLE;
    ovstage_op_id_t fq_op = example_enqueued("get_attribute_write_floor", ovstage_get_attribute_write_floor(stage, global, &fq));
    ovstage_ordinal_t floor = 0;
    ovstage_api_status_t status;
    while ((status = ovstage_fetch_ordinal(stage, fq, 0, &floor)) == OVSTAGE_ERROR_TIMEOUT)
        sched_yield(); /* a real consumer does other work here */
    example_check("fetch_ordinal", status);
    example_wait(stage, "get_attribute_write_floor", fq_op);
    example_wait(stage, "release_ordinal_query", example_enqueued("release_ordinal_query", ovstage_release_ordinal_query(stage, fq)));
    // [/snippet:poll-write-floor]

    int reported = 0;
    while (s->next <= floor && s->next <= TICKS)
    {
        unsigned long long t = s->next;
        /* Only what changed at tick t: [t, t]. Value groups come first,
         * then tombstone groups for deleted cells. */
        ovstage_ordinal_range_t delta = { t, t, true };
        ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
        ovstage_op_id_t op = example_enqueued("read_attributes", ovstage_read_attributes(stage, s->all, &s->temperature, 1, delta, &read));
        ovstage_read_group_t group;
        printf("tick %llu:", t);
        while ((status = ovstage_fetch_read_next(stage, read, OVSTAGE_TIMEOUT_INFINITE, &group)) == OVSTAGE_OK)
        {
            for (uint32_t i = 0; i < group.prims.count; ++i)
            {
                uint32_t prim = group.prims.index_map ? group.prims.index_map[i] : group.prims.offset + i;
                const char* name = sensor_paths[prim].ptr + strlen("/Field/");
                if (group.is_delete)
                {
                    printf(" %s deleted", name);
                    continue;
                }
                const DLTensor* tensor = &group.data.tensors[0];
                uint32_t row = group.data.index_map ? group.data.index_map[i] : i;
                printf(" %s=%.1f", name, ((const float*)((const char*)tensor->data + tensor->byte_offset))[row]);
            }
            example_check("release_group", ovstage_release_group(stage, &group));
        }
        if (status != OVSTAGE_ERROR_END_OF_ITERATION)
            example_check("fetch_read_next", status);
        printf("\n");
        example_wait(stage, "read_attributes", op);
        example_wait(stage, "release_read", example_enqueued("release_read", ovstage_release_read(stage, read)));
        s->next += 1;
        atomic_store(&s->consumed, t);
        reported += 1;
    }
    return reported;
}

static void* producer_thread(void* arg)
{
    struct shared* s = arg;
    for (unsigned long long t = 1; t <= TICKS; ++t)
    {
        /* Bounded run-ahead: stay within WINDOW ticks of the consumer. */
        while (t > atomic_load(&s->consumed) + WINDOW)
            sched_yield();
        produce(s, t);
    }
    return NULL;
}

int main(int argc, char** argv)
{
    int threads = argc > 1 && strcmp(argv[1], "--threads") == 0;
    ovstage_instance_desc_t desc = { "producer-consumer" };
    struct shared s;
    memset(&s, 0, sizeof s);
    if (ovstage_create_instance(&desc, &s.stage) != OVSTAGE_OK)
    {
        fprintf(stderr, "ovstage_create_instance failed: %s\n", example_last_error());
        return 1;
    }
    path_dictionary_instance_t* dict = ovstage_get_path_dictionary(s.stage);
    ovx_string_t name = literal_to_ovx_string("temperature");
    example_check_dict(dict, "create_tokens_from_strings", path_dictionary_create_tokens_from_strings(dict, &name, 1, &s.temperature));
    s.all = example_query(s.stage, sensor_paths, SENSORS);
    ovx_string_t rest[SENSORS - 1] = { sensor_paths[0], sensor_paths[1], sensor_paths[3] };
    s.survivors = example_query(s.stage, rest, SENSORS - 1);
    atomic_init(&s.consumed, 0);
    s.next = 1;

    int reported = 0;
    if (threads)
    {
        pthread_t producer;
        if (pthread_create(&producer, NULL, producer_thread, &s) != 0)
            return 1;
        while (reported < TICKS)
            reported += consume(&s);
        pthread_join(producer, NULL);
    }
    else
    {
        for (unsigned long long t = 1; t <= TICKS; ++t)
        {
            produce(&s, t);
            reported += consume(&s);
        }
    }
    printf("consumer reported %d ticks\n", reported);

    example_wait(s.stage, "release_query", example_enqueued("release_query", ovstage_release_query(s.stage, s.survivors)));
    example_wait(s.stage, "release_query", example_enqueued("release_query", ovstage_release_query(s.stage, s.all)));
    example_check("ovstage_destroy_instance", ovstage_destroy_instance(s.stage));
    return 0;
}
