/*
 * permit.c - moving a granted acquisition's permits out of its op.
 */
#include "fd_internal.h"

int band_fdq_op_take_permit(band_fdq_op *op, band_permit *out)
{
    if (op == NULL || out == NULL || op->_kind != BAND__FDQ_ACQUIRE ||
        op->_state != BAND__FDQ_IDLE || op->status != 0 || op->_taken)
        return BAND_EINVAL;
    int rc = band_permit_adopt(out, op->_a.acq.sem, op->_a.acq.n);
    if (rc == 0)
        op->_taken = 1;
    return rc;
}
