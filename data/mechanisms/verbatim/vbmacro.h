/* vbchan.mod's header (neurosolve's test file): a macro its NMODL statements use */
#define VB_BETA 0.125
