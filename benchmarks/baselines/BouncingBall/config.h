/* BouncingBall baseline: sizes and value references (must match modelDescription.xml). */
#ifndef BOUNCINGBALL_CONFIG_H
#define BOUNCINGBALL_CONFIG_H
#define NX 2
#define NZ 1
#define NREAL 7
#define NDISC 1
enum { VR_h = 0, VR_der_h = 1, VR_v = 2, VR_der_v = 3, VR_g = 4, VR_e = 5, VR_v_min = 6 };
enum { D_resting = 0 };
#endif
