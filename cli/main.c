/*
 * main.c: tpusim's entry point. Commands are added by the CLI work in
 * cli/cli.h; this file dispatches them.
 */
#include <stdio.h>

int main(void)
{
	puts("tpusim " TPUSIM_VERSION);
	return 0;
}
