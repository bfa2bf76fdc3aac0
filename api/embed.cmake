# Writes a file's bytes as a C array: cmake -DIN=file -DOUT=out.c -DNAME=sym -P embed.cmake
# Defines `const char NAME[]` (NUL-terminated) and `const size_t NAME_len`
# (without the NUL).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}" "/* Generated from ${src} by api/embed.cmake: do not edit. */\n#include <stddef.h>\n"
	"extern const char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
	"const char ${NAME}[] = {\n${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
