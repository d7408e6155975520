/* test_dev_launch's device code, in a file other than the launch's. */
#include "dev_launch_body.h"

void dev_launch_record(void *arg)
{
	dev_launch_record_inline(arg);
}
