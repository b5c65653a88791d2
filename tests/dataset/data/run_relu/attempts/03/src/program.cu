// refine candidate
