/* ClutchBasic baseline: sizes and value references (must match modelDescription.xml). */
#ifndef CLUTCHBASIC_CONFIG_H
#define CLUTCHBASIC_CONFIG_H
#define NX 2
#define NZ 0
#define NREAL 12
#define NBOOL 1
enum {
    VR_w1 = 0, VR_der_w1 = 1, VR_w2 = 2, VR_der_w2 = 3, VR_f1 = 4, VR_f2 = 5,
    VR_j1 = 6, VR_j2 = 7, VR_k1 = 8, VR_k2 = 9, VR_t1 = 10, VR_t2 = 11
};
enum { VR_g = 0 };
#endif
