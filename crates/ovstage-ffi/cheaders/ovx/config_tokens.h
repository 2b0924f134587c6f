/* Tokens that process configuration strings may contain. */
#ifndef OVX_CONFIG_TOKENS_H
#define OVX_CONFIG_TOKENS_H

/** Replaced by the running executable's directory in configured paths. */
#define OVX_CONFIG_EXECUTABLE_DIR_TOKEN "${executable_dir}"

#endif /* OVX_CONFIG_TOKENS_H */
