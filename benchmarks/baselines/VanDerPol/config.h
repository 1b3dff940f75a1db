/* VanDerPol baseline: sizes and value references (must match modelDescription.xml). */
#ifndef VANDERPOL_CONFIG_H
#define VANDERPOL_CONFIG_H
#define NX 2
#define NZ 0
#define NREAL 5
enum { VR_x0 = 0, VR_der_x0 = 1, VR_x1 = 2, VR_der_x1 = 3, VR_mu = 4 };
#endif
