#include <time.h>
#include <stdio.h>
static long long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(){int N=1000000;long long s=0;long long t0=ns(CLOCK_MONOTONIC);for(int i=0;i<N;i++)s+=ns(CLOCK_THREAD_CPUTIME_ID);long long t1=ns(CLOCK_MONOTONIC);
for(int i=0;i<N;i++)s+=ns(CLOCK_MONOTONIC);long long t2=ns(CLOCK_MONOTONIC);
printf("thread cpu clock %.1f ns, monotonic %.1f ns (%lld)\n",(t1-t0)/(double)N,(t2-t1)/(double)N,s&1);}
