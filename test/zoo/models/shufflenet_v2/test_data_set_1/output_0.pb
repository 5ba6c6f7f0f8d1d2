
BlogitsJ(L{Ÿ¾Lvþ¼\^¿lKW½P$=lßJ=azm¾I>b3´¼²êU>