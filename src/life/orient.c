/* ENCODE's orientation grid (feBuildDictionaries) and its snapping of a
 * streamline direction to the grid (get_atom in feConnectomeEncoding):
 * the angles are rounded, which is not always the nearest atom on the
 * sphere but is what ENCODE does. */
#include <math.h>

#include "neurosolve/life_io.h"

static const double pi = 3.14159265358979323846;

void ns_life_atom_orientation(int32_t L, int32_t atom, double u[3]) {
    if (atom <= 0 || L < 2) {
        u[0] = 0.0, u[1] = 0.0, u[2] = 1.0;
        return;
    }
    const int32_t i = (atom - 1) / (L - 1), j = (atom - 1) % (L - 1) + 1;
    const double p = i * pi / L, t = j * pi / L;
    u[0] = cos(p) * sin(t);
    u[1] = sin(p) * sin(t);
    u[2] = cos(t);
}

int32_t ns_life_orientation_atom(int32_t L, const double u[3]) {
    if (L < 2) return 0;
    double x = u[0], y = u[1], z = u[2];
    const double len = sqrt(x * x + y * y + z * z);
    if (!(len > 0)) return 0;
    x /= len, y /= len, z /= len;
    /* ENCODE flips vectors with y < 0; y == 0 with x < 0 lands on p = pi,
     * which the wrap below handles (fabs removes a -0.0 that atan2 would
     * turn into -pi). */
    if (y < 0) x = -x, y = -y, z = -z;
    y = fabs(y);
    const double step = pi / L;
    double t = acos(z < -1 ? -1 : z > 1 ? 1 : z); /* pi/2 - elevation */
    const double p = atan2(y, x);                   /* [0, pi] */
    long i = lround(p / step);
    if (i >= L) i = 0, t = pi - t; /* p = pi is p = 0 with the axis mirrored */
    const long j = lround(t / step);
    if (j <= 0 || j >= L) return 0;
    return (int32_t)(1 + i * (L - 1) + (j - 1));
}
