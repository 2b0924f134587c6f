/** The time code meaning "the default value, not a time sample". */
#define OVSTAGE_POPULATION_DEFAULT_TIME NAN

/** Whether `time` is OVSTAGE_POPULATION_DEFAULT_TIME (any NaN is). */
static inline bool ovstage_population_is_default_time(double time)
{
    return isnan(time) != 0;
}
